// host_names.cc — the host names of a group's ranks, and ranks named with their hosts.
#include "host_names.h"

#include <unistd.h>

#include <climits>
#include <cstring>
#include <map>
#include <sstream>

#include "mpi_check.h"

namespace mirror::coll::detail {

std::string this_host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::vector<std::string> gather_host_names(MPI_Comm comm) {
  int size = 1;
  MIRROR_CHECK_MPI(MPI_Comm_size(comm, &size));
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MIRROR_CHECK_MPI(MPI_Get_processor_name(mine, &len));
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MIRROR_CHECK_MPI(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm));
  std::vector<std::string> names(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const char* p = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    names[static_cast<std::size_t>(r)].assign(p, strnlen(p, MPI_MAX_PROCESSOR_NAME));
  }
  return names;
}

std::string ranks_with_hosts(const std::vector<int>& ranks, const std::vector<std::string>& host_of,
                             const std::string& more) {
  std::ostringstream s;
  s << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) s << (i ? ", " : "") << ranks[i];
  // Hosts in order of first appearance, each with its ranks when there are several hosts.
  std::vector<std::string> hosts;
  std::map<std::string, std::vector<int>> on;
  for (int r : ranks) {
    if (r < 0 || static_cast<std::size_t>(r) >= host_of.size()) continue;
    const std::string& h = host_of[static_cast<std::size_t>(r)];
    if (on[h].empty()) hosts.push_back(h);
    on[h].push_back(r);
  }
  std::ostringstream paren;
  if (hosts.size() == 1) {
    paren << "host " << hosts[0];
  } else if (hosts.size() > 1) {
    paren << "hosts ";
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      paren << (i ? "; " : "") << hosts[i] << ":";
      for (std::size_t j = 0; j < on[hosts[i]].size(); ++j) paren << (j ? ", " : " ") << on[hosts[i]][j];
    }
  }
  if (!more.empty()) paren << (hosts.empty() ? "" : "; ") << more;
  if (!paren.str().empty()) s << " (" << paren.str() << ")";
  return s.str();
}

}  // namespace mirror::coll::detail
