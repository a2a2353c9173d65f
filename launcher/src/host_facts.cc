// host_facts.cc — cores (physical, within the affinity mask), euid, GPUs and environment of this machine.
#include "mirror/launch/host_facts.h"

#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "mirror/launch/gpu_discovery.h"

namespace mirror::launch {
namespace {

bool read_int_file(const std::string& path, int* value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> *value);
}

}  // namespace

int count_physical_cores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<int>(online) : 1;
  }
  const int cpus = CPU_COUNT(&mask);
  std::set<std::pair<int, int>> cores;  // (package, core)
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    const std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    int package = 0, core = 0;
    if (!read_int_file(topo + "physical_package_id", &package) || !read_int_file(topo + "core_id", &core)) {
      return cpus > 0 ? cpus : 1;  // no topology: count logical CPUs
    }
    cores.emplace(package, core);
  }
  return cores.empty() ? 1 : static_cast<int>(cores.size());
}

HostFacts gather_host_facts() {
  HostFacts facts;
  facts.cores = count_physical_cores();
  facts.is_root = geteuid() == 0;
  facts.env = capture_environment();
  const GpuDiscovery gpus = discover_gpus(facts.env);
  facts.gpus = gpus.count;
  facts.gpu_summary = gpus.summary;
  return facts;
}

}  // namespace mirror::launch
