// queued_communicator.h — QueuedCommunicator: what every host-buffer backend (MPI transport, shared memory)
// shares. The public calls build a CollectiveCall; issue() validates it (validate_call), numbers it and runs
// it inline or queues it on the OpQueue (async calls on its progress thread, in sequence order); execute()
// refuses every call after a failure (naming the first) and latches the first failure. A backend only
// implements run() — one collective on the executing thread — and may turn an error into a better one
// (explain()). Backends call stop_queue() first in their destructor, so no call runs on a half-destroyed
// object.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "call.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "op_queue.h"
#include "transport.h"

namespace mirror::coll::detail {

class QueuedCommunicator : public Communicator {
 public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::kHost; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) final;
  Work allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) final;
  void broadcast(void* buf, std::size_t count, DataType type, int root) final;
  Work broadcast_async(void* buf, std::size_t count, DataType type, int root) final;
  void allgather(const void* send, void* recv, std::size_t count, DataType type) final;
  Work allgather_async(const void* send, void* recv, std::size_t count, DataType type) final;
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type, ReduceOp op) final;
  Work reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                            ReduceOp op) final;
  void barrier() final;

 protected:
  // Throws kInvalidArgument for a timeout <= 0.
  QueuedCommunicator(int rank, int size, std::chrono::milliseconds timeout, bool use_progress_thread);
  ~QueuedCommunicator() override;

  // Joins the progress thread after the running op; idempotent. First thing in a backend's destructor.
  void stop_queue() noexcept;
  // Whether a collective of this communicator has failed.
  bool failed() const;

  // One collective, on the executing thread (one at a time); throws mirror::Error on failure.
  virtual void run(const CollectiveCall& call, const OpContext& ctx) = 0;
  // The error to raise after `call` failed with `e` on this rank (default: `e` itself).
  virtual Error explain(const CollectiveCall& call, const Error& e);

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;

 private:
  Work issue(CollectiveCall call, bool async);
  void execute(const CollectiveCall& call);

  std::uint64_t next_seq_ = 0;  // guarded by issue_mu_
  std::mutex issue_mu_;
  mutable std::mutex failure_mu_;
  std::string failure_;  // first failure; empty while healthy
  ErrorKind failure_kind_ = ErrorKind::kInternal;
  std::unique_ptr<OpQueue> queue_;
};

}  // namespace mirror::coll::detail
