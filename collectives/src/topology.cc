// topology.cc — Topology::detect (node detection over MPI, or the hosts_for_testing seam) and its tests
// of shape.
#include "topology.h"

#include <map>
#include <sstream>

#include "mirror/error.h"
#include "mpi_check.h"

namespace mirror::coll::detail {

Topology Topology::detect(MPI_Comm comm, int hosts_for_testing) {
  Topology t;
  t.comm = comm;
  MIRROR_CHECK_MPI(MPI_Comm_rank(comm, &t.rank));
  MIRROR_CHECK_MPI(MPI_Comm_size(comm, &t.size));
  t.host_of.assign(static_cast<std::size_t>(t.size), 0);
  if (hosts_for_testing > 0) {
    MIRROR_CHECK(hosts_for_testing <= t.size, kInvalidArgument,
                 "CommOptions.hosts_for_testing (--fake-hosts) " << hosts_for_testing << " is more than the "
                                                                 << t.size << " ranks; expected 1.." << t.size);
    t.fake = true;
    t.hosts = hosts_for_testing;
    for (int r = 0; r < t.size; ++r) {
      t.host_of[static_cast<std::size_t>(r)] =
          static_cast<int>(static_cast<long long>(r) * hosts_for_testing / t.size);
    }
    return t;
  }
  // The lowest rank of this node names it; hosts are numbered in the order of those ranks.
  MPI_Comm node = MPI_COMM_NULL;
  MIRROR_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, t.rank, MPI_INFO_NULL, &node));
  int lowest = t.rank;
  const int rc = MPI_Allreduce(&t.rank, &lowest, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  MIRROR_CHECK_MPI(rc);
  std::vector<int> lowest_of(static_cast<std::size_t>(t.size));
  MIRROR_CHECK_MPI(MPI_Allgather(&lowest, 1, MPI_INT, lowest_of.data(), 1, MPI_INT, comm));
  std::map<int, int> index;  // lowest rank -> host index (ordered by that rank)
  for (int l : lowest_of) index.emplace(l, 0);
  int next = 0;
  for (auto& [l, i] : index) i = next++;
  for (int r = 0; r < t.size; ++r) t.host_of[static_cast<std::size_t>(r)] = index[lowest_of[static_cast<std::size_t>(r)]];
  t.hosts = next;
  return t;
}

int Topology::ranks_on(int host) const {
  int n = 0;
  for (int h : host_of) n += h == host ? 1 : 0;
  return n;
}

std::string Topology::ranks_per_host() const {
  std::ostringstream s;
  for (int h = 0; h < hosts; ++h) s << (h ? ", " : "") << ranks_on(h);
  return s.str();
}

bool Topology::uniform_blocks(std::string* why) const {
  const int per = size / hosts;
  for (int h = 0; h < hosts; ++h) {
    if (ranks_on(h) != per) {
      *why = "hosts have " + ranks_per_host() + " ranks";
      return false;
    }
  }
  for (int r = 0; r < size; ++r) {
    if (host_of[static_cast<std::size_t>(r)] != r / per) {
      *why = "ranks are not in consecutive blocks per host (rank " + std::to_string(r) + " is on host " +
             std::to_string(host_of[static_cast<std::size_t>(r)]) + "; map ranks by slot, not round-robin by node)";
      return false;
    }
  }
  return true;
}

}  // namespace mirror::coll::detail
