// queued_communicator.cc — QueuedCommunicator: numbered calls -> OpQueue -> the backend's run(), with the
// failure latch and the call's deadline.
#include "queued_communicator.h"

namespace mirror::coll::detail {

QueuedCommunicator::QueuedCommunicator(const BackendInfo& info, int rank, int size,
                                       std::chrono::milliseconds timeout, bool use_progress_thread)
    : CommunicatorBase(info, rank, size, timeout), queue_(std::make_unique<OpQueue>(use_progress_thread, timeout)) {}

QueuedCommunicator::~QueuedCommunicator() { stop_queue(); }

void QueuedCommunicator::stop_queue() noexcept { queue_.reset(); }

Error QueuedCommunicator::explain(const CollectiveCall&, const Error& e) { return e; }

Work QueuedCommunicator::dispatch(const CollectiveCall& call, bool async) {
  MIRROR_CHECK(queue_ != nullptr, kInternal, "collective issued on a communicator being destroyed");
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
  latch()->check(ctx.describe());
  ctx.deadline = Clock::now() + timeout_;
  try {
    run(call, ctx);
  } catch (const Error& e) {
    Error explained = explain(call, e);
    latch()->record(explained);
    throw explained;
  }
}

}  // namespace mirror::coll::detail
