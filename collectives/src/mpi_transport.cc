// mpi_transport.cc — MpiTransport: Isend/Irecv in pieces of at most 1 GiB, polled against the deadline
// (and the interrupt check).
#include "mpi_transport.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "host_names.h"
#include "mirror/error.h"
#include "mpi_check.h"
#include "mpi_requests.h"

namespace mirror::coll::detail {
namespace {

constexpr std::size_t kMaxPiece = std::size_t{1} << 30;  // MPI counts are int: split larger messages
// How long a wait yields before it naps. Short, because a network step takes milliseconds: a wait that
// kept yielding through it would take the CPU from the ranks' other work (the hierarchical allreduce's
// shared-memory stages run beside its progress threads when ranks outnumber cores; docs/multi-node.md).
constexpr auto kYieldFor = std::chrono::milliseconds(1);

void post(std::vector<MPI_Request>& reqs, bool is_send, int peer, const void* data, std::size_t bytes, int tag,
          MPI_Comm comm) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t off = 0; off < bytes; off += kMaxPiece) {
    const int n = static_cast<int>(std::min(kMaxPiece, bytes - off));
    MPI_Request r = MPI_REQUEST_NULL;
    if (is_send) {
      MIRROR_CHECK_MPI(MPI_Isend(p + off, n, MPI_BYTE, peer, tag, comm, &r));
    } else {
      MIRROR_CHECK_MPI(MPI_Irecv(const_cast<unsigned char*>(p) + off, n, MPI_BYTE, peer, tag, comm, &r));
    }
    reqs.push_back(r);
  }
}

}  // namespace

MpiTransport::MpiTransport(MPI_Comm group) {
  MIRROR_CHECK_MPI(MPI_Comm_dup(group, &comm_));
  MIRROR_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MIRROR_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  MIRROR_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  void* value = nullptr;
  int flag = 0;
  MIRROR_CHECK_MPI(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &flag));
  if (flag && value) tag_ub_ = *static_cast<int*>(value);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized && !keep_comm_) MPI_Comm_free(&comm_);
}

int MpiTransport::tag_for(const OpContext& ctx) const {
  // The sequence number in the tag: a rank that skipped a collective cannot feed the next one's data
  // into this one; the waiting ranks time out instead.
  return static_cast<int>(ctx.seq % static_cast<std::uint64_t>(tag_ub_));
}

void MpiTransport::send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) {
  exchange(peer, data, bytes, -1, nullptr, 0, ctx);
}

void MpiTransport::recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) {
  exchange(-1, nullptr, 0, peer, data, bytes, ctx);
}

void MpiTransport::sendrecv(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer,
                            void* recv_data, std::size_t recv_bytes, const OpContext& ctx) {
  exchange(send_peer, send_data, send_bytes, recv_peer, recv_data, recv_bytes, ctx);
}

void MpiTransport::abandon(std::vector<MPI_Request>& reqs, std::size_t first_send, int send_peer,
                           const OpContext& ctx) {
  const auto let_go = [&](std::size_t i) { return i >= first_send && peer_done_ && peer_done_(send_peer); };
  unfinished_ += abandon_requests(reqs, abandon_drain(ctx.timeout), let_go);
}

void MpiTransport::exchange(int send_peer, const void* send_data, std::size_t send_bytes, int recv_peer,
                            void* recv_data, std::size_t recv_bytes, const OpContext& ctx) {
  const int tag = tag_for(ctx);
  std::vector<MPI_Request> reqs;
  reqs.reserve(4);
  // Zero-byte messages are still sent: they keep both sides of a step in lockstep.
  if (recv_peer >= 0) {
    if (recv_bytes == 0) {
      MPI_Request r;
      MIRROR_CHECK_MPI(MPI_Irecv(nullptr, 0, MPI_BYTE, recv_peer, tag, comm_, &r));
      reqs.push_back(r);
    } else {
      post(reqs, false, recv_peer, recv_data, recv_bytes, tag, comm_);
    }
  }
  const std::size_t first_send = reqs.size();
  if (send_peer >= 0) {
    if (send_bytes == 0) {
      MPI_Request r;
      MIRROR_CHECK_MPI(MPI_Isend(nullptr, 0, MPI_BYTE, send_peer, tag, comm_, &r));
      reqs.push_back(r);
    } else {
      post(reqs, true, send_peer, send_data, send_bytes, tag, comm_);
    }
  }
  // Poll: spin briefly (latency), then yield for kYieldFor, then sleep in short naps (oversubscribed ranks need
  // the CPU: a thread that yields is still runnable and keeps taking it from the ranks with work to do).
  const auto start = Clock::now();
  for (long polls = 0;; ++polls) {
    int done = 0;
    const int rc = MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      abandon(reqs, first_send, send_peer, ctx);
      MIRROR_THROW(kMpi, ctx.describe() << ": MPI_Testall failed: " << mpi_error_string(rc));
    }
    if (done) return;
    const auto now = Clock::now();
    if (now >= ctx.deadline) {
      abandon(reqs, first_send, send_peer, ctx);
      std::ostringstream peers;
      // (No byte counts: under the consistency check they are those of staging buffers, not the call's.)
      if (recv_peer >= 0) peers << "receiving from " << ranks_with_hosts({recv_peer}, host_names_);
      if (send_peer >= 0) peers << (recv_peer >= 0 ? ", " : "") << "sending to " << ranks_with_hosts({send_peer}, host_names_);
      std::ostringstream what;
      what << ctx.describe() << " timed out after " << ctx.timeout.count() << " ms on "
           << ranks_with_hosts({rank_}, host_names_) << " while " << peers.str();
      throw PeerTimeoutError(recv_peer, send_peer, what.str(), __FILE__, __LINE__);
    }
    if (polls < 64) continue;
    // Past the latency spin: look for failure notices now and then (an MPI_Iprobe on another communicator).
    if (interrupt_ && polls % 16 == 0 && interrupt_()) {
      abandon(reqs, first_send, send_peer, ctx);
      MIRROR_THROW(kRemote, ctx.describe() << " on rank " << rank_ << " stopped: another rank reported a failure");
    }
    if (now - start < kYieldFor) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace mirror::coll::detail
