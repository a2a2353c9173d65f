// hierarchical_communicator.h — HierarchicalCommunicator: the "hierarchical" backend (host buffers) for
// ranks on several hosts with the same number L of ranks each, as consecutive blocks (rank = host * L +
// local). It is composed of two existing backends over split communicators: a ShmCommunicator among the
// ranks of each host (MPI_Comm_split by host) and an MpiCommunicator among the ranks of the same local
// index on every host (split by local index, ordered by host), so only the cross-host part uses the
// network, and the L cross-host groups work in parallel:
//   allreduce (> 64 KiB): reduce-scatter inside the host (shm), each local rank all-reduces its shard with
//     its peers on the other hosts (MPI), all-gather inside the host (shm), pipelined in pieces of 4 MiB (the
//     network stage of one piece runs on the inner MPI communicator's progress thread while the host
//     reduces the next piece and gathers the previous one); the n % L tail elements and
//     small messages: allreduce inside the host, then across hosts. Avg reduces as sum and divides once
//     at the end; 16-bit floats are widened to float32 first and rounded once (as every host backend).
//   broadcast (>= 256 KiB): inside the root's host, then each local rank broadcasts its 1/L share from the
//     root's host (MPI), then all-gather inside every other host; small: across hosts among the root's
//     local index, then inside each host.
//   allgather: across hosts (each rank's block to its peers), inside the host, then reordered into rank
//     order. reduce_scatter: reordered, reduce-scatter inside the host, then across hosts.
//   barrier: inside the host, then across hosts.
// Every rank gets bit-identical results. The consistency check (CommOptions::check_consistency) compares
// every call's fingerprint before any data moves: among the host's ranks (shm allgather), then, with a
// "my host disagrees" flag, among each local index's peers (MPI allgather); the inner communicators run
// without their own check. An error inside a stage names the call and the stage (whose rank numbers it
// explains), and is then explained over the whole job as the mpi backend does (failure_notices.h): the rank
// announces it on its own MpiNotices over all ranks, listens a grace period, and names in world ranks the
// ranks that did not arrive and those in the call. Queued and numbered like every host backend.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend_table.h"
#include "failure_notices.h"
#include "mpi_communicator.h"
#include "queued_communicator.h"
#include "shm_communicator.h"

namespace mirror::coll::detail {

class HierarchicalCommunicator final : public QueuedCommunicator {
 public:
  // Collective over topology.comm, whose hosts must be uniform blocks. nullptr on every rank, with *why,
  // when a host's shared-memory segment cannot be made.
  static std::unique_ptr<HierarchicalCommunicator> create(const CommOptions& options, const Topology& topology,
                                                          std::string* why);
  HierarchicalCommunicator(const CommOptions& options, const Topology& topology,
                           std::unique_ptr<ShmCommunicator> intra, std::unique_ptr<MpiCommunicator> cross);
  ~HierarchicalCommunicator() override;

  // The shared-memory part's counters (shm's names).
  std::vector<Statistic> statistics() const override;

 private:
  void run(const CollectiveCall& call, const OpContext& ctx) override;
  Error explain(const CollectiveCall& call, const Error& e) override;
  void agree(const CollectiveCall& call);
  void do_allreduce(const CollectiveCall& call);
  void allreduce_in_pieces(const unsigned char* s, unsigned char* d, std::size_t q, DataType acc, ReduceOp op,
                           ReduceOp call_op);
  void do_broadcast(const CollectiveCall& call);
  void do_allgather(const CollectiveCall& call);
  void do_reduce_scatter(const CollectiveCall& call);
  // The inner communicators, with the stage recorded for explain().
  Communicator& in_host();
  Communicator& across_hosts();
  std::string across_hosts_stage() const;
  unsigned char* space(std::vector<unsigned char>& v, std::size_t bytes);

  CommOptions options_;
  const int hosts_;     // H
  const int per_host_;  // L
  const int host_;      // this rank's host
  const int local_;     // this rank's index inside its host
  std::unique_ptr<ShmCommunicator> intra_;
  std::unique_ptr<MpiCommunicator> cross_;
  std::unique_ptr<MpiNotices> notices_;  // over all ranks: failures explained in world ranks
  // Executing thread only:
  std::string stage_;  // the stage running now (for explain), empty outside one
  std::vector<unsigned char> wide_, t1_, t2_;
  std::vector<Work> outstanding_;  // pieces across hosts left running by a failure, waited out in explain()
};

// The table row (backends.cc).
const BackendRow& hierarchical_backend();

}  // namespace mirror::coll::detail
