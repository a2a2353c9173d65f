// mirror/launch/gpu_discovery.h — how many GPUs this machine gives to a job, without linking CUDA:
// libcuda.so.1 is opened at run time and asked through the driver API (cuInit, cuDeviceGetCount), which
// applies CUDA_VISIBLE_DEVICES. No driver means zero GPUs; CUDA_VISIBLE_DEVICES="" or "-1" means zero GPUs
// without asking the driver; CUDA_VISIBLE_DEVICES naming a GPU the driver does not have is an error.
#pragma once

#include <optional>
#include <string>

#include "mirror/launch/environment.h"

namespace mirror::launch {

// What the CUDA driver answered. init_status is the CUresult of cuInit (0 = CUDA_SUCCESS).
struct CudaDriverProbe {
  bool loaded = false;     // libcuda.so.1 was found and has cuInit/cuDeviceGetCount
  int init_status = 0;     // cuInit(0); 100 = CUDA_ERROR_NO_DEVICE
  int device_count = 0;    // cuDeviceGetCount, when cuInit succeeded
  std::string detail;      // dlerror() text or which call failed, for messages
};

struct GpuDiscovery {
  int count = 0;           // GPUs a job on this machine can use
  std::string summary;     // one line for the user: how the count was found (or why it is 0)
};

// Number of entries CUDA would read from a CUDA_VISIBLE_DEVICES value: comma-separated entries up to the
// first one that starts with '-' (CUDA stops there), blanks ignored. "" and "-1" give 0.
int count_requested_devices(const std::string& cuda_visible_devices);

// Asks libcuda.so.1 (in this process; the driver reads CUDA_VISIBLE_DEVICES at cuInit).
CudaDriverProbe probe_cuda_driver();

// The decision, separated from the probe so it is unit-testable. cuda_visible_devices is the variable's
// value or nullopt when unset. Throws mirror::Error(kInvalidArgument) when the variable asks for more GPUs
// than the driver can give (an index or UUID that does not exist, or a repeated one).
GpuDiscovery interpret_gpu_probe(const std::optional<std::string>& cuda_visible_devices,
                                 const CudaDriverProbe& probe);

// count_requested_devices == 0 -> 0 GPUs without loading the driver; otherwise probe and interpret.
GpuDiscovery discover_gpus(const Environment& env);

}  // namespace mirror::launch
