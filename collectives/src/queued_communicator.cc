// queued_communicator.cc — QueuedCommunicator: public calls -> validated, numbered CollectiveCall -> OpQueue
// -> the backend's run(), with the failure latch.
#include "queued_communicator.h"

namespace mirror::coll::detail {

QueuedCommunicator::QueuedCommunicator(int rank, int size, std::chrono::milliseconds timeout,
                                       bool use_progress_thread)
    : rank_(rank), size_(size), timeout_(timeout) {
  MIRROR_CHECK(timeout_.count() > 0, kInvalidArgument, "CommOptions.timeout must be > 0 ms, got " << timeout_.count());
  queue_ = std::make_unique<OpQueue>(use_progress_thread, timeout_);
}

QueuedCommunicator::~QueuedCommunicator() { stop_queue(); }

void QueuedCommunicator::stop_queue() noexcept { queue_.reset(); }

bool QueuedCommunicator::failed() const {
  std::lock_guard lk(failure_mu_);
  return !failure_.empty();
}

Error QueuedCommunicator::explain(const CollectiveCall&, const Error& e) { return e; }

Work QueuedCommunicator::issue(CollectiveCall call, bool async) {
  validate_call(call, rank_, size_);
  // Numbering and queueing under one lock, so sequence order is execution order. A blocking call keeps
  // the lock while it runs: collectives from several threads at once have no defined order anyway.
  std::lock_guard lk(issue_mu_);
  MIRROR_CHECK(queue_ != nullptr, kInternal, "collective issued on a communicator being destroyed");
  call.seq = next_seq_++;
  auto fn = [this, call] { execute(call); };
  if (async) return queue_->submit(call.describe(size_), std::move(fn));
  queue_->run([&call, n = size_] { return call.describe(n); }, std::move(fn));
  return Work();
}

void QueuedCommunicator::execute(const CollectiveCall& call) {
  OpContext ctx;
  ctx.seq = call.seq;
  ctx.timeout = timeout_;
  ctx.describe = [&call, n = size_] { return call.describe(n); };
  {
    std::lock_guard lk(failure_mu_);
    if (!failure_.empty()) {
      throw Error(failure_kind_, ctx.describe() + " refused: the communicator is unusable after an earlier failure: " +
                                     failure_, __FILE__, __LINE__);
    }
  }
  ctx.deadline = Clock::now() + timeout_;
  try {
    run(call, ctx);
  } catch (const Error& e) {
    Error explained = explain(call, e);
    std::lock_guard lk(failure_mu_);
    if (failure_.empty()) {
      failure_ = explained.message();
      failure_kind_ = explained.kind();
    }
    throw explained;
  }
}

// --- the public calls: build the CollectiveCall and issue it ---

void QueuedCommunicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  issue({CallKind::kAllreduce, send, recv, count, type, op, 0, 0}, false);
}
Work QueuedCommunicator::allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  return issue({CallKind::kAllreduce, send, recv, count, type, op, 0, 0}, true);
}
void QueuedCommunicator::broadcast(void* buf, std::size_t count, DataType type, int root) {
  issue({CallKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, 0}, false);
}
Work QueuedCommunicator::broadcast_async(void* buf, std::size_t count, DataType type, int root) {
  return issue({CallKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, 0}, true);
}
void QueuedCommunicator::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  issue({CallKind::kAllgather, send, recv, count, type, ReduceOp::kSum, 0, 0}, false);
}
Work QueuedCommunicator::allgather_async(const void* send, void* recv, std::size_t count, DataType type) {
  return issue({CallKind::kAllgather, send, recv, count, type, ReduceOp::kSum, 0, 0}, true);
}
void QueuedCommunicator::reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
                                        ReduceOp op) {
  issue({CallKind::kReduceScatter, send, recv, recv_count, type, op, 0, 0}, false);
}
Work QueuedCommunicator::reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                                              ReduceOp op) {
  return issue({CallKind::kReduceScatter, send, recv, recv_count, type, op, 0, 0}, true);
}
void QueuedCommunicator::barrier() {
  issue({CallKind::kBarrier, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 0, 0}, false);
}

}  // namespace mirror::coll::detail
