// world_hosts.h — the reference for the tests that check host names in failure messages: every rank's
// gethostname(), gathered over MPI_COMM_WORLD with plain MPI (not the library's own gathering).
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

namespace mirror::coll::testing {

inline std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  gethostname(name, HOST_NAME_MAX);
  return name;
}

// Collective over MPI_COMM_WORLD: call it on every rank, outside per-rank error handlers.
inline std::vector<std::string> world_hosts() {
  char mine[HOST_NAME_MAX + 1] = {};
  gethostname(mine, HOST_NAME_MAX);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(static_cast<std::size_t>(size) * sizeof(mine));
  MPI_Allgather(mine, sizeof(mine), MPI_CHAR, all.data(), sizeof(mine), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * sizeof(mine));
  return hosts;
}

}  // namespace mirror::coll::testing
