// host_names.h — which host each rank of a group runs on, for failure messages: the names are gathered
// once when a communicator is made (collective), and ranks are named with their hosts, as in
// "rank 2 (host mirror-h1)", "ranks 2, 3 (host mirror-h1; no answer ...)" or "ranks 1, 2 (hosts a: 1; b: 2)".
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace mirror::coll::detail {

// This process's host name (gethostname: the UTS namespace's, as MPI_Get_processor_name's).
std::string this_host_name();

// The host name of every rank of `comm`, by rank (MPI_Allgather; collective over `comm`).
std::vector<std::string> gather_host_names(MPI_Comm comm);

// `ranks` (ascending) as "rank r" / "ranks a, b", followed by their hosts from `host_of` (by rank; empty:
// unknown, no hosts named) and `more`, in one parenthesis: "ranks 2, 3 (host h1; no answer within 500 ms)".
std::string ranks_with_hosts(const std::vector<int>& ranks, const std::vector<std::string>& host_of,
                             const std::string& more = "");

}  // namespace mirror::coll::detail
