// mpi_communicator.h — MpiCommunicator: the "mpi" backend (host buffers, MPI point-to-point between
// every pair of ranks; one host or many). Runs each call (numbered and queued by QueuedCommunicator) with
// the algorithms of host_algorithms.h over an MpiTransport. 16-bit floats are widened to float32, reduced,
// and rounded once (reduce.h).
//
// Failures are explained, not just reported: CheckedTransport (the consistency check) sends this rank's
// CallFingerprint ahead of the first message of each collective on each channel and compares the one it
// receives; when a collective fails, the rank announces what it was doing over MpiNotices, listens a short
// grace period (timeout / 4, between 100 ms and 2 s) to what the other ranks answer, and throws an error that
// names the collective, the ranks that did not arrive (no answer: stalled outside any collective, or dead;
// or busy in another collective, named), and for a mismatch every rank's call.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>

#include "backend_table.h"
#include "call.h"
#include "checked_transport.h"
#include "failure_notices.h"
#include "host_algorithms.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "mpi_transport.h"
#include "queued_communicator.h"

namespace mirror::coll::detail {

class MpiCommunicator final : public QueuedCommunicator {
 public:
  // Collective over `group` (duplicated twice: collective traffic and failure notices). The progress
  // thread is used when options.progress_thread and MPI gave MPI_THREAD_MULTIPLE.
  MpiCommunicator(MPI_Comm group, const CommOptions& options);
  ~MpiCommunicator() override;
  // As a part of a communicator that explains failures itself over all its ranks (hierarchical): waits
  // also stop (kRemote) when `interrupt` says so, and failures are raised as they are, without this
  // communicator's own announce-and-listen (which would keep this rank from answering the owner's
  // notices for a grace period); `peer_done(k)` says whether rank k of this group has announced its
  // failure to the owner. Set before the first call.
  void serve_as_part(std::function<bool()> interrupt, std::function<bool(int)> peer_done);
  // Transfers given up on after a failure that MPI had not finished (mpi_requests.h); their buffers, the
  // caller's included, may still be used by MPI, so an owner keeps its own until the process ends.
  int unfinished_transfers() const { return transport_->unfinished(); }

 private:
  void run(const CollectiveCall& call, const OpContext& ctx) override;
  Error explain(const CollectiveCall& call, const Error& e) override;
  void do_allreduce(const CollectiveCall& call, const OpContext& ctx);
  void do_allgather(const CollectiveCall& call, const OpContext& ctx);
  void do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx);

  std::unique_ptr<MpiTransport> transport_;
  std::unique_ptr<CheckedTransport> checked_;  // null when the check is off
  Transport* algo_transport_ = nullptr;  // what the algorithms use: checked_ or transport_
  std::unique_ptr<MpiNotices> notices_;
  CommOptions options_;
  bool explained_by_owner_ = false;  // serve_as_part
  Workspace workspace_;  // used by the executing thread only (one op at a time)
};

// The table row (backends.cc).
const BackendRow& mpi_backend();

}  // namespace mirror::coll::detail
