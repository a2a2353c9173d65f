// host_communicator.h — HostCommunicator: the host (CPU buffer) backend. Validates each call, numbers it,
// and runs it through OpQueue with the algorithms of host_algorithms.h over an MpiTransport.
// 16-bit floats are widened to float32, reduced, and rounded once (reduce.h). After a collective fails
// (timeout, MPI error) the communicator is unusable: every later call throws, naming the first failure.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "call.h"
#include "host_algorithms.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "op_queue.h"
#include "transport.h"

namespace mirror::coll::detail {

class HostCommunicator final : public Communicator {
 public:
  // Takes the transport; the progress thread is used when use_progress_thread (MPI_THREAD_MULTIPLE).
  HostCommunicator(std::unique_ptr<Transport> transport, const CommOptions& options, bool use_progress_thread);
  ~HostCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::kHost; }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override;
  Work allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override;
  void broadcast(void* buf, std::size_t count, DataType type, int root) override;
  Work broadcast_async(void* buf, std::size_t count, DataType type, int root) override;
  void allgather(const void* send, void* recv, std::size_t count, DataType type) override;
  Work allgather_async(const void* send, void* recv, std::size_t count, DataType type) override;
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type, ReduceOp op) override;
  Work reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                            ReduceOp op) override;
  void barrier() override;

 private:
  // Validates and numbers the call (caller's thread), then runs it inline or queues it.
  Work issue(CollectiveCall call, bool async);
  void execute(const CollectiveCall& call);  // on the executing thread
  void do_allreduce(const CollectiveCall& call, const OpContext& ctx);
  void do_allgather(const CollectiveCall& call, const OpContext& ctx);
  void do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx);

  std::unique_ptr<Transport> transport_;
  CommOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::uint64_t next_seq_ = 0;  // guarded by issue_mu_
  std::mutex issue_mu_;
  std::mutex failure_mu_;
  std::string failure_;  // first failure; empty while healthy
  ErrorKind failure_kind_ = ErrorKind::kInternal;
  Workspace workspace_;  // used by the executing thread only (one op at a time)
  std::unique_ptr<OpQueue> queue_;  // last member: destroyed (thread joined) first
};

}  // namespace mirror::coll::detail
