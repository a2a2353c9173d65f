// failure_notices.cc — MpiNotices, the failure-notice channel; explain_collective_failure(): what a
// failing rank announces, hears, and reports.
#include "failure_notices.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>

#include "host_names.h"
#include "mpi_check.h"
#include "mpi_requests.h"
#include "transport.h"

namespace mirror::coll::detail {

// --- MpiNotices ---

namespace {
constexpr int kNoticeTag = 1;
}

MpiNotices::MpiNotices(MPI_Comm group) {
  MIRROR_CHECK_MPI(MPI_Comm_dup(group, &comm_));
  MIRROR_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MIRROR_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  MIRROR_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  heard_.resize(static_cast<std::size_t>(size_));
  host_names_ = gather_host_names(comm_);
}

MpiNotices::~MpiNotices() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Sends to ranks that never listened (stalled, gone): give them a moment, then let go; a notice still
  // on its way keeps its memory.
  if (abandon_requests(sends_, std::chrono::milliseconds(100)) > 0) keep_until_exit(std::move(outgoing_));
  if (comm_ != MPI_COMM_NULL && !keep_comm_) MPI_Comm_free(&comm_);
}

bool MpiNotices::pending() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, comm_, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

bool MpiNotices::heard_from(int r) {
  if (r < 0 || r >= size_) return false;
  drain();
  return heard_[static_cast<std::size_t>(r)].has_value();
}

void MpiNotices::announce(const FailureNotice& notice) {
  if (announced_ || size_ == 1) return;
  announced_ = true;
  outgoing_ = std::make_unique<FailureNotice>(notice);
  outgoing_->from_rank = rank_;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request r = MPI_REQUEST_NULL;
    if (MPI_Isend(outgoing_.get(), sizeof(FailureNotice), MPI_BYTE, peer, kNoticeTag, comm_, &r) == MPI_SUCCESS) {
      sends_.push_back(r);
    }
  }
}

void MpiNotices::drain() {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, comm_, &flag, &st) != MPI_SUCCESS || !flag) return;
    FailureNotice n;
    if (MPI_Recv(&n, sizeof(n), MPI_BYTE, st.MPI_SOURCE, kNoticeTag, comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    n.text[sizeof(n.text) - 1] = '\0';
    if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < size_) {
      n.from_rank = st.MPI_SOURCE;
      heard_[static_cast<std::size_t>(st.MPI_SOURCE)] = n;
    }
  }
}

const std::vector<std::optional<FailureNotice>>& MpiNotices::collect(std::chrono::milliseconds grace) {
  const auto until = Clock::now() + grace;
  for (;;) {
    drain();
    int missing = 0;
    for (int r = 0; r < size_; ++r) missing += (r != rank_ && !heard_[static_cast<std::size_t>(r)]) ? 1 : 0;
    if (missing == 0 || Clock::now() >= until) break;
    if (!sends_.empty()) {  // keep our own notices moving
      int done = 0;
      MPI_Testall(static_cast<int>(sends_.size()), sends_.data(), &done, MPI_STATUSES_IGNORE);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return heard_;
}

// --- explain_collective_failure ---

Error explain_collective_failure(MpiNotices& notices, const CollectiveCall& call, const Error& e,
                                 std::chrono::milliseconds timeout, int size) {
  const int rank = notices.rank();
  if (size == 1) return e;
  const std::vector<std::string>& hosts = notices.host_names();
  const auto named = [&](int r) { return ranks_with_hosts({r}, hosts); };
  // 1. Say what happened here.
  FailureNotice mine;
  mine.from_rank = rank;
  mine.call = fingerprint(call, rank);
  mine.timeout_ms = static_cast<std::int32_t>(timeout.count());
  if (const auto* mm = dynamic_cast<const MismatchError*>(&e)) {
    mine.state = FailureNotice::kMismatch;
    mine.other = mm->theirs();
  } else if (e.kind() == ErrorKind::kTimeout) {
    mine.state = FailureNotice::kTimedOut;
    if (const auto* pt = dynamic_cast<const PeerTimeoutError*>(&e)) {
      mine.peer = pt->recv_peer() >= 0 ? pt->recv_peer() : pt->send_peer();
    }
  } else if (e.kind() == ErrorKind::kRemote) {
    mine.state = FailureNotice::kWaiting;
  } else {
    mine.state = FailureNotice::kFailed;
    std::strncpy(mine.text, e.message().c_str(), sizeof(mine.text) - 1);
  }
  notices.announce(mine);
  // 2. Listen: every rank alive in a collective answers at once; the rest are waited for `grace`.
  const auto grace = std::clamp(timeout / 4, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  const auto& heard = notices.collect(std::chrono::duration_cast<std::chrono::milliseconds>(grace));
  std::vector<const FailureNotice*> notes{&mine};
  for (const auto& h : heard) {
    if (h) notes.push_back(&*h);
  }
  // Every rank's call as known: its own word first, else what a peer received from it.
  std::vector<std::optional<CallFingerprint>> calls(static_cast<std::size_t>(size));
  for (const auto* n : notes) {
    if (n->from_rank >= 0 && n->from_rank < size && n->call.valid()) {
      calls[static_cast<std::size_t>(n->from_rank)] = n->call;
      calls[static_cast<std::size_t>(n->from_rank)]->from_rank = n->from_rank;
    }
  }
  for (const auto* n : notes) {
    const int o = n->other.from_rank;
    if (n->state == FailureNotice::kMismatch && o >= 0 && o < size && !calls[static_cast<std::size_t>(o)] &&
        n->other.valid()) {
      calls[static_cast<std::size_t>(o)] = n->other;
    }
  }
  std::vector<int> silent;
  for (int r = 0; r < size; ++r) {
    if (!calls[static_cast<std::size_t>(r)]) silent.push_back(r);
  }
  // 3. A mismatch: the earliest sequence number at which two ranks' calls differ, or one detected it.
  std::optional<std::uint64_t> mismatch_seq;
  for (const auto* n : notes) {
    if (n->state == FailureNotice::kMismatch && (!mismatch_seq || n->call.seq < *mismatch_seq)) mismatch_seq = n->call.seq;
  }
  for (const auto& a : calls) {
    for (const auto& b : calls) {
      if (a && b && a->seq == b->seq && !a->same_call(*b) && (!mismatch_seq || a->seq < *mismatch_seq)) {
        mismatch_seq = a->seq;
      }
    }
  }
  const auto grace_ms = std::chrono::duration_cast<std::chrono::milliseconds>(grace).count();
  std::ostringstream m;
  if (mismatch_seq) {
    std::vector<CallFingerprint> known;
    for (const auto& c : calls) {
      if (c) known.push_back(*c);
    }
    m << mismatch_message(*mismatch_seq, known);
    if (!silent.empty()) {
      m << "; no answer from " << ranks_with_hosts(silent, hosts, "within " + std::to_string(grace_ms) + " ms");
    }
    m << " (seen on " << named(rank) << " in " << call.describe(size) << ")";
    return Error(ErrorKind::kInvalidArgument, m.str(), __FILE__, __LINE__);
  }
  // 4. A timeout or another failure: which ranks are in this collective, which are not.
  ErrorKind kind = e.kind();
  if (mine.state == FailureNotice::kTimedOut) {
    m << e.message();
  } else {
    m << call.describe(size) << " failed on " << named(rank) << ": ";
    const FailureNotice* cause = nullptr;
    for (const auto* n : notes) {
      if (n != &mine && (n->state == FailureNotice::kTimedOut || n->state == FailureNotice::kFailed) &&
          (!cause || (cause->state != FailureNotice::kTimedOut && n->state == FailureNotice::kTimedOut))) {
        cause = n;
      }
    }
    if (mine.state == FailureNotice::kFailed) {
      m << e.message();
    } else if (cause && cause->state == FailureNotice::kTimedOut) {
      m << named(cause->from_rank) << " timed out after " << cause->timeout_ms << " ms in "
        << cause->call.describe(true) << (cause->peer >= 0 ? " waiting for " + named(cause->peer) : "");
      kind = ErrorKind::kTimeout;
    } else if (cause) {
      m << named(cause->from_rank) << " failed in " << cause->call.describe(true) << ": " << cause->text;
      kind = ErrorKind::kRemote;
    } else {
      m << "another rank reported a failure";
      kind = ErrorKind::kRemote;
    }
  }
  std::vector<int> in_it;
  std::vector<std::string> elsewhere;
  for (int r = 0; r < size; ++r) {
    const auto& c = calls[static_cast<std::size_t>(r)];
    if (!c) continue;
    if (c->seq == call.seq) {
      in_it.push_back(r);
    } else {
      elsewhere.push_back(ranks_with_hosts({r}, hosts, "in " + c->describe(true)));
    }
  }
  if (!silent.empty() || !elsewhere.empty()) {
    m << "; did not arrive: ";
    const char* sep = "";
    if (!silent.empty()) {
      m << ranks_with_hosts(silent, hosts,
                            "no answer within " + std::to_string(grace_ms) + " ms: stalled outside any collective, or dead");
      sep = ", ";
    }
    for (const auto& x : elsewhere) {
      m << sep << x;
      sep = ", ";
    }
  } else {
    m << "; every rank answered from inside it (a rank is stuck, or the network failed)";
  }
  m << "; in it: " << ranks_with_hosts(in_it, hosts);
  return Error(kind, m.str(), __FILE__, __LINE__);
}

}  // namespace mirror::coll::detail
