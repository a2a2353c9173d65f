// mirror/launch/host_facts.h — HostFacts: what mirrorrun knows about the machine it runs on (cores, root or
// not, GPUs, environment), gathered once so the planner and the command-line builder stay pure functions.
#pragma once

#include <string>

#include "mirror/launch/environment.h"

namespace mirror::launch {

struct HostFacts {
  int cores = 1;        // physical cores this process may run on (affinity mask), at least 1
  bool is_root = false; // effective uid 0: Open MPI then needs --allow-run-as-root
  int gpus = 0;         // GPUs the CUDA driver exposes (honours CUDA_VISIBLE_DEVICES); 0 without a driver
  std::string gpu_summary;  // how `gpus` was found, for messages (GpuDiscovery::summary)
  Environment env;      // the environment mirrorrun was started with
};

// Physical cores in this process's CPU affinity mask (distinct core/package pairs from sysfs); falls back
// to the number of CPUs in the mask when sysfs says nothing. Never less than 1.
int count_physical_cores();

// Cores, euid and the environment from the running process; GPUs from discover_gpus (gpu_discovery.h).
// Throws mirror::Error when CUDA_VISIBLE_DEVICES names GPUs the driver does not have.
HostFacts gather_host_facts();

}  // namespace mirror::launch
