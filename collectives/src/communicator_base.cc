// communicator_base.cc — CommunicatorBase: public calls -> validated, numbered CollectiveCall -> the
// backend's dispatch(); FailureLatch.
#include "communicator_base.h"

namespace mirror::coll::detail {

void FailureLatch::check(const std::string& what) const {
  std::lock_guard lk(mu_);
  if (failure_.empty()) return;
  throw Error(kind_, what + " refused: the communicator is unusable after an earlier failure: " + failure_,
              __FILE__, __LINE__);
}

void FailureLatch::record(const Error& e) {
  std::lock_guard lk(mu_);
  if (!failure_.empty()) return;
  failure_ = e.message();
  kind_ = e.kind();
}

bool FailureLatch::failed() const {
  std::lock_guard lk(mu_);
  return !failure_.empty();
}

CommunicatorBase::CommunicatorBase(const BackendInfo& info, int rank, int size, std::chrono::milliseconds timeout)
    : info_(info), rank_(rank), size_(size), timeout_(timeout) {
  MIRROR_CHECK(timeout_.count() > 0, kInvalidArgument, "CommOptions.timeout must be > 0 ms, got " << timeout_.count());
}

CollectiveCall CommunicatorBase::barrier_call() const {
  return {CallKind::kBarrier, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 0, 0};
}

Work CommunicatorBase::issue(CollectiveCall call, bool async) {
  validate_call(call, rank_, size_);
  // Numbering and dispatching under one lock, so sequence order is execution order. A blocking call keeps
  // the lock while it runs: collectives from several threads at once have no defined order anyway.
  std::lock_guard lk(issue_mu_);
  call.seq = next_seq_++;
  return dispatch(call, async);
}

// --- the public calls: build the CollectiveCall and issue it ---

void CommunicatorBase::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  issue({CallKind::kAllreduce, send, recv, count, type, op, 0, 0}, false);
}
Work CommunicatorBase::allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  return issue({CallKind::kAllreduce, send, recv, count, type, op, 0, 0}, true);
}
void CommunicatorBase::broadcast(void* buf, std::size_t count, DataType type, int root) {
  issue({CallKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, 0}, false);
}
Work CommunicatorBase::broadcast_async(void* buf, std::size_t count, DataType type, int root) {
  return issue({CallKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, 0}, true);
}
void CommunicatorBase::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  issue({CallKind::kAllgather, send, recv, count, type, ReduceOp::kSum, 0, 0}, false);
}
Work CommunicatorBase::allgather_async(const void* send, void* recv, std::size_t count, DataType type) {
  return issue({CallKind::kAllgather, send, recv, count, type, ReduceOp::kSum, 0, 0}, true);
}
void CommunicatorBase::reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
                                      ReduceOp op) {
  issue({CallKind::kReduceScatter, send, recv, recv_count, type, op, 0, 0}, false);
}
Work CommunicatorBase::reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                                            ReduceOp op) {
  return issue({CallKind::kReduceScatter, send, recv, recv_count, type, op, 0, 0}, true);
}
void CommunicatorBase::barrier() { issue(barrier_call(), false); }

}  // namespace mirror::coll::detail
