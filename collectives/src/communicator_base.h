// communicator_base.h — CommunicatorBase: what every backend shares, host and device buffers alike. The
// public calls build a CollectiveCall; issue() validates it (validate_call, the one choke point), numbers
// it (the sequence number every rank gives the same call) and hands it to the backend's dispatch() under
// one lock, so sequence order is issue order. The timeout is checked once here (> 0). FailureLatch keeps
// the first failure: after it every call is refused, naming it. Backends: QueuedCommunicator (host
// buffers: an OpQueue runs each call's run()), NcclCommunicator (enqueues on its CUDA stream).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "call.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll::detail {

// The first failure of a communicator. Shared with outstanding Works that may outlive it.
class FailureLatch {
 public:
  // Throws "<what> refused: the communicator is unusable after an earlier failure: <first>" once failed.
  void check(const std::string& what) const;
  // Keeps `e` when it is the first failure.
  void record(const Error& e);
  bool failed() const;

 private:
  mutable std::mutex mu_;
  std::string failure_;  // empty while healthy
  ErrorKind kind_ = ErrorKind::kInternal;
};

class CommunicatorBase : public Communicator {
 public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const BackendInfo& backend() const override { return info_; }

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
  CommunicatorBase(const BackendInfo& info, int rank, int size, std::chrono::milliseconds timeout);

  // Runs (async: starts) `call`, already validated and numbered; called under the issue lock, so calls
  // reach it in sequence order. A blocking call returns a completed Work.
  virtual Work dispatch(const CollectiveCall& call, bool async) = 0;
  // The barrier's call (the nccl backend reduces one int on the device for it).
  virtual CollectiveCall barrier_call() const;

  bool failed() const { return latch_->failed(); }
  const std::shared_ptr<FailureLatch>& latch() const { return latch_; }

  const BackendInfo& info_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;

 private:
  Work issue(CollectiveCall call, bool async);

  std::mutex issue_mu_;
  std::uint64_t next_seq_ = 0;  // guarded by issue_mu_
  std::shared_ptr<FailureLatch> latch_ = std::make_shared<FailureLatch>();
};

}  // namespace mirror::coll::detail
