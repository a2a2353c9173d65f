// topology.h — Topology: which ranks of a group share a host. Detected once per make_communicator
// (collective): MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds the ranks of each node; hosts are numbered
// in the order of their lowest rank. CommOptions::hosts_for_testing replaces the detection (a test seam:
// rank r of n is on host r * K / n).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace mirror::coll::detail {

struct Topology {
  MPI_Comm comm = MPI_COMM_NULL;  // the group (not owned)
  int rank = 0;
  int size = 1;
  std::vector<int> host_of;  // host index of every rank
  int hosts = 1;
  bool fake = false;  // from hosts_for_testing

  // Collective over `comm`. hosts_for_testing > 0 fakes that many hosts (1..size, else kInvalidArgument).
  static Topology detect(MPI_Comm comm, int hosts_for_testing);

  int host() const { return host_of[static_cast<std::size_t>(rank)]; }
  int ranks_on(int host) const;
  // Whether every host holds the same number of ranks as consecutive blocks (rank = host * L + local);
  // *why says how it does not ("hosts have 2, 1 ranks").
  bool uniform_blocks(std::string* why) const;
  // "2 hosts (host 0: 2 ranks, host 1: 1)" style summary of the ranks per host: "2, 1".
  std::string ranks_per_host() const;
};

}  // namespace mirror::coll::detail
