// host_communicator.cc — HostCommunicator: validation, sequencing, failure latch, staging buffers.
#include "host_communicator.h"

#include <cstring>

#include "reduce.h"

namespace mirror::coll::detail {

HostCommunicator::HostCommunicator(std::unique_ptr<Transport> transport, const CommOptions& options,
                                   bool use_progress_thread)
    : transport_(std::move(transport)), options_(options) {
  rank_ = transport_->rank();
  size_ = transport_->size();
  MIRROR_CHECK(options_.timeout.count() > 0, kInvalidArgument,
               "CommOptions.timeout must be > 0 ms, got " << options_.timeout.count());
  queue_ = std::make_unique<OpQueue>(use_progress_thread, options_.timeout);
}

HostCommunicator::~HostCommunicator() { queue_.reset(); }

Work HostCommunicator::issue(CollectiveCall call, bool async) {
  validate_call(call, rank_, size_);
  // Numbering and queueing under one lock, so sequence order is execution order. A blocking call keeps
  // the lock while it runs: collectives from several threads at once have no defined order anyway.
  std::lock_guard lk(issue_mu_);
  call.seq = next_seq_++;
  auto fn = [this, call] { execute(call); };
  if (async) return queue_->submit(call.describe(size_), std::move(fn));
  queue_->run([&call, n = size_] { return call.describe(n); }, std::move(fn));
  return Work();
}

void HostCommunicator::execute(const CollectiveCall& call) {
  OpContext ctx;
  ctx.seq = call.seq;
  ctx.timeout = options_.timeout;
  ctx.describe = [&call, n = size_] { return call.describe(n); };
  {
    std::lock_guard lk(failure_mu_);
    if (!failure_.empty()) {
      throw Error(failure_kind_, ctx.describe() + " refused: the communicator is unusable after an earlier failure: " +
                                     failure_, __FILE__, __LINE__);
    }
  }
  ctx.deadline = Clock::now() + options_.timeout;
  try {
    switch (call.kind) {
      case CallKind::kAllreduce: do_allreduce(call, ctx); break;
      case CallKind::kBroadcast:
        detail::broadcast(*transport_, workspace_, call.recv, call.count * dtype_size(call.type), call.root, ctx);
        break;
      case CallKind::kAllgather: do_allgather(call, ctx); break;
      case CallKind::kReduceScatter: do_reduce_scatter(call, ctx); break;
      case CallKind::kBarrier: barrier_dissemination(*transport_, workspace_, ctx); break;
    }
  } catch (const Error& e) {
    std::lock_guard lk(failure_mu_);
    if (failure_.empty()) {
      failure_ = e.message();
      failure_kind_ = e.kind();
    }
    throw;
  }
}

void HostCommunicator::do_allreduce(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t n = call.count;
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  if (acc != call.type) {  // 16-bit: reduce in float32, round once
    auto* f = reinterpret_cast<float*>(workspace_.get(1, n * sizeof(float)));
    widen_to_float(call.send, f, n, call.type);
    detail::allreduce(*transport_, workspace_, f, n, acc, call.op, ctx);
    narrow_from_float(f, call.recv, n, call.type);
    return;
  }
  const bool small = n * dtype_size(acc) <= kSmallAllreduceBytes || n < static_cast<std::size_t>(size_);
  if (size_ > 1 && !small) {  // ring: reads send directly, no copy for out-of-place
    allreduce_ring(*transport_, workspace_, call.send, call.recv, n, acc, call.op, ctx);
    return;
  }
  if (call.send != call.recv) std::memcpy(call.recv, call.send, n * dtype_size(call.type));
  detail::allreduce(*transport_, workspace_, call.recv, n, acc, call.op, ctx);
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
  allgather_ring(*transport_, workspace_, call.recv, chunks, es, ctx);
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
  if (size_ > 1) reduce_scatter_ring(*transport_, workspace_, work, work, chunks, acc, call.op, ctx);
  unsigned char* mine = work + static_cast<std::size_t>(rank_) * n * acc_size;
  finish_reduction(mine, n, acc, call.op, size_);
  if (acc != call.type) {
    narrow_from_float(reinterpret_cast<const float*>(mine), call.recv, n, call.type);
  } else {
    std::memcpy(call.recv, mine, n * acc_size);
  }
}

// --- the public calls: build the CollectiveCall and issue it ---

void HostCommunicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  issue({CallKind::kAllreduce, send, recv, count, type, op, 0, 0}, false);
}
Work HostCommunicator::allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  return issue({CallKind::kAllreduce, send, recv, count, type, op, 0, 0}, true);
}
void HostCommunicator::broadcast(void* buf, std::size_t count, DataType type, int root) {
  issue({CallKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, 0}, false);
}
Work HostCommunicator::broadcast_async(void* buf, std::size_t count, DataType type, int root) {
  return issue({CallKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, 0}, true);
}
void HostCommunicator::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  issue({CallKind::kAllgather, send, recv, count, type, ReduceOp::kSum, 0, 0}, false);
}
Work HostCommunicator::allgather_async(const void* send, void* recv, std::size_t count, DataType type) {
  return issue({CallKind::kAllgather, send, recv, count, type, ReduceOp::kSum, 0, 0}, true);
}
void HostCommunicator::reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
                                      ReduceOp op) {
  issue({CallKind::kReduceScatter, send, recv, recv_count, type, op, 0, 0}, false);
}
Work HostCommunicator::reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                                            ReduceOp op) {
  return issue({CallKind::kReduceScatter, send, recv, recv_count, type, op, 0, 0}, true);
}
void HostCommunicator::barrier() { issue({CallKind::kBarrier, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 0, 0}, false); }

}  // namespace mirror::coll::detail
