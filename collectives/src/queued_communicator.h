// queued_communicator.h — QueuedCommunicator: what every host-buffer backend (mpi, shm, hierarchical)
// adds to CommunicatorBase: dispatch() runs each call inline or queues it on the OpQueue (async calls on
// its progress thread, in sequence order); execute() refuses every call after a failure (naming the
// first), gives the call its deadline, and latches the first failure. A backend only implements run() —
// one collective on the executing thread — and may turn an error into a better one (explain()). Backends
// call stop_queue() first in their destructor, so no call runs on a half-destroyed object.
#pragma once

#include <chrono>
#include <memory>

#include "call.h"
#include "communicator_base.h"
#include "op_queue.h"
#include "transport.h"

namespace mirror::coll::detail {

class QueuedCommunicator : public CommunicatorBase {
 protected:
  QueuedCommunicator(const BackendInfo& info, int rank, int size, std::chrono::milliseconds timeout,
                     bool use_progress_thread);
  ~QueuedCommunicator() override;

  // Joins the progress thread after the running op; idempotent. First thing in a backend's destructor.
  void stop_queue() noexcept;

  // One collective, on the executing thread (one at a time); throws mirror::Error on failure.
  virtual void run(const CollectiveCall& call, const OpContext& ctx) = 0;
  // The error to raise after `call` failed with `e` on this rank (default: `e` itself).
  virtual Error explain(const CollectiveCall& call, const Error& e);

 private:
  Work dispatch(const CollectiveCall& call, bool async) final;
  void execute(const CollectiveCall& call);

  std::unique_ptr<OpQueue> queue_;
};

}  // namespace mirror::coll::detail
