// host_communicator.cc — HostCommunicator: validation, sequencing, failure latch, staging buffers; the
// consistency check (CheckedTransport) and the failure explanation (announce, listen, name the ranks).
#include "host_communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "mpi_transport.h"
#include "reduce.h"

namespace mirror::coll::detail {

// --- CheckedTransport ---

CheckedTransport::CheckedTransport(Transport& inner)
    : inner_(inner),
      sent_epoch_(static_cast<std::size_t>(inner.size()), 0),
      recv_epoch_(static_cast<std::size_t>(inner.size()), 0),
      send_stage_(kFingerprintBytes + kPiggybackBytes),
      recv_stage_(kFingerprintBytes + kPiggybackBytes) {}

void CheckedTransport::begin(const CallFingerprint& mine) {
  mine_ = mine;
  ++epoch_;  // every peer's mark (an older epoch) now reads "not yet exchanged"
}

void CheckedTransport::check(const unsigned char* received, int peer) const {
  CallFingerprint theirs;
  std::memcpy(&theirs, received, sizeof(theirs));
  theirs.from_rank = peer;
  if (theirs.magic != CallFingerprint::kMagic) {
    std::ostringstream m;
    m << "ranks issued mismatched collectives at #" << mine_.seq << ": rank " << mine_.from_rank << " "
      << mine_.describe() << ", rank " << peer << " sent a message without a call fingerprint (the consistency "
      << "check is off there: CommOptions.check_consistency and MIRROR_CHECK_COLLECTIVES must agree on all ranks)";
    theirs = CallFingerprint();
    theirs.from_rank = peer;
    throw MismatchError(mine_, theirs, m.str(), __FILE__, __LINE__);
  }
  if (!mine_.same_call(theirs)) {
    throw MismatchError(mine_, theirs, mismatch_message(mine_.seq, {mine_, theirs}), __FILE__, __LINE__);
  }
}

namespace {
// One exchange through the inner transport; a negative peer means "no such side".
void exchange(Transport& t, int sp, const void* sd, std::size_t sb, int rp, void* rd, std::size_t rb,
              const OpContext& ctx) {
  if (sp >= 0 && rp >= 0) {
    t.sendrecv(sp, sd, sb, rp, rd, rb, ctx);
  } else if (sp >= 0) {
    t.send(sp, sd, sb, ctx);
  } else if (rp >= 0) {
    t.recv(rp, rd, rb, ctx);
  }
}
}  // namespace

void CheckedTransport::send(int peer, const void* data, std::size_t bytes, const OpContext& ctx) {
  sendrecv(peer, data, bytes, -1, nullptr, 0, ctx);
}

void CheckedTransport::recv(int peer, void* data, std::size_t bytes, const OpContext& ctx) {
  sendrecv(-1, nullptr, 0, peer, data, bytes, ctx);
}

void CheckedTransport::sendrecv(int sp, const void* sd, std::size_t sb, int rp, void* rd, std::size_t rb,
                                const OpContext& ctx) {
  const bool first_send = sp >= 0 && sent_epoch_[static_cast<std::size_t>(sp)] != epoch_;
  const bool first_recv = rp >= 0 && recv_epoch_[static_cast<std::size_t>(rp)] != epoch_;
  if (!first_send && !first_recv) return exchange(inner_, sp, sd, sb, rp, rd, rb, ctx);
  constexpr std::size_t kF = kFingerprintBytes;
  // Exchange 1: fingerprints (with small payloads) on first channels, plain data on the others.
  const void* s1 = sd;
  std::size_t s1b = sb;
  bool send_later = false;
  if (first_send) {
    sent_epoch_[static_cast<std::size_t>(sp)] = epoch_;
    if (sb <= kPiggybackBytes) {
      std::memcpy(send_stage_.data(), &mine_, kF);
      if (sb > 0) std::memcpy(send_stage_.data() + kF, sd, sb);
      s1 = send_stage_.data();
      s1b = kF + sb;
    } else {
      s1 = &mine_;
      s1b = kF;
      send_later = true;
    }
  }
  void* r1 = rd;
  std::size_t r1b = rb;
  bool recv_later = false;
  if (first_recv) {
    recv_epoch_[static_cast<std::size_t>(rp)] = epoch_;
    r1 = recv_stage_.data();
    r1b = recv_stage_.size();  // room for either form the peer may have sent
    recv_later = rb > kPiggybackBytes;
  }
  exchange(inner_, sp, s1, s1b, rp, r1, r1b, ctx);
  if (first_recv) {
    check(recv_stage_.data(), rp);
    if (!recv_later && rb > 0) std::memcpy(rd, recv_stage_.data() + kF, rb);
  }
  // Exchange 2: payloads that followed their fingerprint as messages of their own.
  exchange(inner_, send_later ? sp : -1, sd, sb, recv_later ? rp : -1, rd, rb, ctx);
}

// --- HostCommunicator ---

HostCommunicator::HostCommunicator(std::unique_ptr<Transport> transport, const CommOptions& options,
                                   bool use_progress_thread)
    : QueuedCommunicator(transport->rank(), transport->size(), options.timeout, use_progress_thread),
      transport_(std::move(transport)),
      options_(options) {
  if (const char* env = std::getenv("MIRROR_CHECK_COLLECTIVES"); env && std::string(env) == "0") {
    options_.check_consistency = false;
  }
  algo_transport_ = transport_.get();
  if (options_.check_consistency && size_ > 1) {
    checked_ = std::make_unique<CheckedTransport>(*transport_);
    algo_transport_ = checked_.get();
  }
  notices_ = std::make_unique<MpiNotices>();  // collective: every rank builds its communicator together
  if (auto* mpi = dynamic_cast<MpiTransport*>(transport_.get())) {
    mpi->set_interrupt([n = notices_.get()] { return n->pending(); });
  }
}

HostCommunicator::~HostCommunicator() {
  stop_queue();  // the running op finishes first
  if (failed()) {  // abandoned messages must not reach a later communicator (see keep_comm_on_destroy)
    if (auto* mpi = dynamic_cast<MpiTransport*>(transport_.get())) mpi->keep_comm_on_destroy();
    if (notices_) notices_->keep_comm_on_destroy();
  }
}

void HostCommunicator::run(const CollectiveCall& call, const OpContext& ctx) {
  if (checked_) checked_->begin(fingerprint(call, rank_));
  switch (call.kind) {
    case CallKind::kAllreduce: do_allreduce(call, ctx); break;
    case CallKind::kBroadcast:
      // The root of a tree broadcast receives nothing, so it could not see a peer that disagrees (two
      // ranks that both think they are the root would both just send). With the check on, a broadcast
      // starts with a fingerprint-only exchange around the ring, which does not depend on the root.
      if (checked_ && call.count > 0) {
        checked_->sendrecv((rank_ + 1) % size_, nullptr, 0, (rank_ + size_ - 1) % size_, nullptr, 0, ctx);
      }
      detail::broadcast(*algo_transport_, workspace_, call.recv, call.count * dtype_size(call.type), call.root, ctx);
      break;
    case CallKind::kAllgather: do_allgather(call, ctx); break;
    case CallKind::kReduceScatter: do_reduce_scatter(call, ctx); break;
    case CallKind::kBarrier: barrier_dissemination(*algo_transport_, workspace_, ctx); break;
  }
}

Error HostCommunicator::explain(const CollectiveCall& call, const Error& e) {
  if (!notices_ || size_ == 1) return e;
  return explain_collective_failure(*notices_, call, e, options_.timeout, size_);
}

void HostCommunicator::do_allreduce(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t n = call.count;
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  if (acc != call.type) {  // 16-bit: reduce in float32, round once
    auto* f = reinterpret_cast<float*>(workspace_.get(1, n * sizeof(float)));
    widen_to_float(call.send, f, n, call.type);
    detail::allreduce(*algo_transport_, workspace_, f, n, acc, call.op, ctx);
    narrow_from_float(f, call.recv, n, call.type);
    return;
  }
  const bool small = n * dtype_size(acc) <= kSmallAllreduceBytes || n < static_cast<std::size_t>(size_);
  if (size_ > 1 && !small) {  // ring: reads send directly, no copy for out-of-place
    allreduce_ring(*algo_transport_, workspace_, call.send, call.recv, n, acc, call.op, ctx);
    return;
  }
  if (call.send != call.recv) std::memcpy(call.recv, call.send, n * dtype_size(call.type));
  detail::allreduce(*algo_transport_, workspace_, call.recv, n, acc, call.op, ctx);
}

void HostCommunicator::do_allgather(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), n = call.count;
  if (n == 0) return;
  auto* mine = static_cast<unsigned char*>(call.recv) + static_cast<std::size_t>(rank_) * n * es;
  if (call.send != mine) std::memcpy(mine, call.send, n * es);
  if (size_ == 1) return;
  ChunkLayout chunks;
  for (int i = 0; i < size_; ++i) {
    chunks.offset.push_back(static_cast<std::size_t>(i) * n);
    chunks.count.push_back(n);
  }
  chunks.max_count = n;
  allgather_ring(*algo_transport_, workspace_, call.recv, chunks, es, ctx);
}

void HostCommunicator::do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t n = call.count, total = n * static_cast<std::size_t>(size_);
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  const std::size_t acc_size = dtype_size(acc);
  // Work on a copy: the send buffer is const, and in place only this rank's block may change.
  unsigned char* work = workspace_.get(1, total * acc_size);
  if (acc != call.type) {
    widen_to_float(call.send, reinterpret_cast<float*>(work), total, call.type);
  } else {
    std::memcpy(work, call.send, total * acc_size);
  }
  ChunkLayout chunks;
  for (int i = 0; i < size_; ++i) {
    chunks.offset.push_back(static_cast<std::size_t>(i) * n);
    chunks.count.push_back(n);
  }
  chunks.max_count = n;
  if (size_ > 1) reduce_scatter_ring(*algo_transport_, workspace_, work, work, chunks, acc, call.op, ctx);
  unsigned char* mine = work + static_cast<std::size_t>(rank_) * n * acc_size;
  finish_reduction(mine, n, acc, call.op, size_);
  if (acc != call.type) {
    narrow_from_float(reinterpret_cast<const float*>(mine), call.recv, n, call.type);
  } else {
    std::memcpy(call.recv, mine, n * acc_size);
  }
}

}  // namespace mirror::coll::detail
