// device.cc — mirror/nn/device.h: device names, GPU discovery and choice, CPU thread count (OpenMP's, which
// oneDNN runs on; OpenMP's count is per calling thread: the thread that computes must set it).
#include "mirror/nn/device.h"

#include <omp.h>

#include "backend.h"
#include "mirror/error.h"

namespace mirror::nn {

std::string to_string(const Device& device) {
  return device.is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(device.index);
}

bool built_with_cuda() {
#if MIRROR_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#if MIRROR_HAVE_CUDA
  return detail::cuda::device_count();
#else
  return 0;
#endif
}

void set_cpu_threads(int threads) {
  MIRROR_CHECK(threads >= 1, kInvalidArgument, "CPU thread count must be >= 1, got " << threads);
  omp_set_num_threads(threads);  // oneDNN's threads: Debian builds it with OpenMP (DNNL_RUNTIME_OMP)
}

int cpu_threads() { return omp_get_max_threads(); }

const char* to_string(DeviceRequest request) {
  switch (request) {
    case DeviceRequest::kAuto: return "auto";
    case DeviceRequest::kCpu: return "cpu";
    case DeviceRequest::kCuda: return "cuda";
  }
  return "?";
}

DeviceRequest parse_device_request(std::string_view name) {
  for (DeviceRequest r : {DeviceRequest::kAuto, DeviceRequest::kCpu, DeviceRequest::kCuda})
    if (name == to_string(r)) return r;
  MIRROR_THROW(kInvalidArgument, "device '" << name << "' is not one of auto, cpu, cuda");
}

Device resolve_device(std::string_view name, int local_rank, int cpu_threads) {
  return resolve_device(parse_device_request(name), local_rank, cpu_threads);
}

Device resolve_device(DeviceRequest request, int local_rank, int cpu_threads) {
  MIRROR_CHECK(local_rank >= 0, kInvalidArgument, "local rank must be >= 0, got " << local_rank);
  const int gpus = cuda_device_count();
  if (request == DeviceRequest::kCuda || (request == DeviceRequest::kAuto && gpus > 0)) {
    MIRROR_CHECK(gpus > 0, kInvalidArgument,
                 "device cuda requested but no CUDA GPU is visible"
                     << (built_with_cuda() ? " (check the driver and CUDA_VISIBLE_DEVICES)"
                                           : " (this build has no CUDA: configure with -DMIRROR_WITH_CUDA=ON)"));
#if MIRROR_HAVE_CUDA
    const Device device{DeviceKind::kCuda, local_rank % gpus};
    detail::cuda::set_device(device.index);
    return device;
#endif
  }
  set_cpu_threads(cpu_threads);
  return Device{DeviceKind::kCpu, 0};
}

void synchronize(const Device& device) {
  if (device.is_cpu()) return;
#if MIRROR_HAVE_CUDA
  detail::cuda::synchronize();
#else
  detail::require_cpu(device);
#endif
}

namespace detail {
void require_cpu(const Device& device) {
  MIRROR_CHECK(device.is_cpu(), kInvalidArgument,
               "device " << to_string(device) << " used but this build has no CUDA (MIRROR_WITH_CUDA=OFF)");
}
}  // namespace detail

}  // namespace mirror::nn
