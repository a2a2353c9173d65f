// runtime.cc — MpiRuntime: MPI start-up/shutdown, world and local ranks, abort of the whole job.
#include "mirror/coll/runtime.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <chrono>
#include <thread>

#include "host_names.h"
#include "mpi_check.h"
#include "topology.h"

namespace mirror::coll {
namespace {
MPI_Comm g_local_comm = MPI_COMM_NULL;
bool g_we_initialized = false;
std::vector<MpiRuntime::Host> g_hosts;

std::vector<MpiRuntime::Host> find_hosts() {
  const detail::Topology t = detail::Topology::detect(MPI_COMM_WORLD, 0);
  const std::vector<std::string> names = detail::gather_host_names(MPI_COMM_WORLD);
  std::vector<MpiRuntime::Host> hosts(static_cast<std::size_t>(t.hosts));
  for (int r = 0; r < t.size; ++r) {
    auto& h = hosts[static_cast<std::size_t>(t.host_of[static_cast<std::size_t>(r)])];
    if (h.ranks.empty()) h.name = names[static_cast<std::size_t>(r)];
    h.ranks.push_back(r);
  }
  return hosts;
}
}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int already = 0;
  MIRROR_CHECK_MPI(MPI_Initialized(&already));
  if (!already) {
    int provided = 0;
    MIRROR_CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    g_we_initialized = true;
  }
  // Errors come back as codes that MIRROR_CHECK_MPI turns into exceptions, instead of aborting inside MPI.
  MIRROR_CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MIRROR_CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &g_local_comm));
  g_hosts = find_hosts();
}

const std::vector<MpiRuntime::Host>& MpiRuntime::hosts() {
  MIRROR_CHECK(!g_hosts.empty(), kInternal, "MpiRuntime not constructed");
  return g_hosts;
}

std::string MpiRuntime::hosts_summary() {
  const auto& hs = hosts();
  std::size_t ranks = 0;
  bool uniform = true;
  for (const Host& h : hs) {
    ranks += h.ranks.size();
    uniform = uniform && h.ranks.size() == hs[0].ranks.size();
  }
  std::ostringstream s;
  s << ranks << " rank" << (ranks == 1 ? "" : "s") << " on " << hs.size() << " host" << (hs.size() == 1 ? "" : "s")
    << " (";
  if (uniform && hs.size() > 1) s << hs[0].ranks.size() << " per host: ";
  for (std::size_t i = 0; i < hs.size(); ++i) {
    s << (i ? ", " : "") << hs[i].name;
    if (!uniform) s << ": " << hs[i].ranks.size();
  }
  s << ")";
  return s.str();
}

MpiRuntime::~MpiRuntime() {
  if (g_local_comm != MPI_COMM_NULL) MPI_Comm_free(&g_local_comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized && !finalized) MPI_Finalize();
}

bool MpiRuntime::initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

int MpiRuntime::world_rank() {
  int r = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &r));
  return r;
}

int MpiRuntime::world_size() {
  int n = 1;
  MIRROR_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n));
  return n;
}

int MpiRuntime::local_rank() {
  int r = 0;
  MIRROR_CHECK(g_local_comm != MPI_COMM_NULL, kInternal, "MpiRuntime not constructed");
  MIRROR_CHECK_MPI(MPI_Comm_rank(g_local_comm, &r));
  return r;
}

int MpiRuntime::local_size() {
  int n = 1;
  MIRROR_CHECK(g_local_comm != MPI_COMM_NULL, kInternal, "MpiRuntime not constructed");
  MIRROR_CHECK_MPI(MPI_Comm_size(g_local_comm, &n));
  return n;
}

std::string MpiRuntime::hostname() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MIRROR_CHECK_MPI(MPI_Get_processor_name(name, &len));
  return std::string(name, static_cast<std::size_t>(len));
}

void MpiRuntime::abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  // The other ranks that failed in the same collective finish explaining it within milliseconds of this one
  // (over the hierarchical backend one stage after another); MPI_Abort kills them at once, so let them say it.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, code == 0 ? 1 : code);
  std::_Exit(code == 0 ? 1 : code);
}

int agree_exit_code(int local_code) {
  int agreed = local_code;
  MIRROR_CHECK_MPI(MPI_Allreduce(&local_code, &agreed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return agreed;
}

}  // namespace mirror::coll
