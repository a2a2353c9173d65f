// gpu_discovery.cc — counts GPUs through the CUDA driver API loaded with dlopen (no CUDA headers or link):
// the three driver calls are declared here with plain function-pointer types.
#include "mirror/launch/gpu_discovery.h"

#include <dlfcn.h>

#include <sstream>

#include "mirror/error.h"

namespace mirror::launch {
namespace {

using CuInitFn = int (*)(unsigned int flags);           // CUresult cuInit(unsigned int)
using CuDeviceGetCountFn = int (*)(int* count);         // CUresult cuDeviceGetCount(int*)
constexpr int kCudaErrorNoDevice = 100;                 // CUDA_ERROR_NO_DEVICE

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

int count_requested_devices(const std::string& cuda_visible_devices) {
  int count = 0;
  std::stringstream in(cuda_visible_devices);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    entry = trim(entry);
    if (entry.empty()) continue;
    if (entry[0] == '-') break;  // CUDA stops reading at an invalid (negative) entry
    ++count;
  }
  return count;
}

CudaDriverProbe probe_cuda_driver() {
  CudaDriverProbe probe;
  // Never dlclose: the driver keeps threads and state, and this process ends soon anyway.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    probe.detail = why ? why : "libcuda.so.1 not found";
    return probe;
  }
  auto cu_init = reinterpret_cast<CuInitFn>(dlsym(lib, "cuInit"));
  auto cu_count = reinterpret_cast<CuDeviceGetCountFn>(dlsym(lib, "cuDeviceGetCount"));
  if (!cu_init || !cu_count) {
    probe.detail = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
    return probe;
  }
  probe.loaded = true;
  probe.init_status = cu_init(0);
  if (probe.init_status != 0) {
    probe.detail = "cuInit returned CUresult " + std::to_string(probe.init_status);
    return probe;
  }
  int count = 0;
  const int status = cu_count(&count);
  if (status != 0) {
    probe.init_status = status;
    probe.detail = "cuDeviceGetCount returned CUresult " + std::to_string(status);
    return probe;
  }
  probe.device_count = count;
  return probe;
}

GpuDiscovery interpret_gpu_probe(const std::optional<std::string>& cuda_visible_devices,
                                 const CudaDriverProbe& probe) {
  GpuDiscovery out;
  const std::string cvd_text = cuda_visible_devices ? "CUDA_VISIBLE_DEVICES='" + *cuda_visible_devices + "'" : "";
  if (cuda_visible_devices && count_requested_devices(*cuda_visible_devices) == 0) {
    out.summary = cvd_text + " hides every GPU";
    return out;
  }
  if (!probe.loaded) {
    out.summary = "no CUDA driver (" + probe.detail + ")";
    return out;
  }
  const bool no_device = probe.init_status == kCudaErrorNoDevice;
  if (probe.init_status != 0 && !no_device) {
    out.summary = "the CUDA driver cannot be used (" + probe.detail + ")";
    return out;
  }
  const int available = no_device ? 0 : probe.device_count;
  if (cuda_visible_devices) {
    const int requested = count_requested_devices(*cuda_visible_devices);
    MIRROR_CHECK(available >= requested, kInvalidArgument,
                 cvd_text << " names " << requested << " GPU(s) but the CUDA driver can use only " << available
                          << " of them: an index or UUID there is not a GPU of this machine, or one is repeated "
                             "(list them with nvidia-smi -L; unset the variable to use all GPUs)");
  }
  out.count = available;
  out.summary = available == 0 ? "the CUDA driver sees no GPU"
                               : std::to_string(available) + " GPU(s) from the CUDA driver" +
                                     (cuda_visible_devices ? " (" + cvd_text + ")" : "");
  return out;
}

GpuDiscovery discover_gpus(const Environment& env) {
  const auto cvd = lookup(env, "CUDA_VISIBLE_DEVICES");
  if (cvd && count_requested_devices(*cvd) == 0) return interpret_gpu_probe(cvd, CudaDriverProbe{});
  return interpret_gpu_probe(cvd, probe_cuda_driver());
}

}  // namespace mirror::launch
