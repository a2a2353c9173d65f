// mirror/nn/device.h — where a rank computes: the CPU (oneDNN) or one CUDA GPU, and how it is chosen.
// `--device auto|cpu|cuda` resolves here: auto takes a GPU when one is visible, else the CPU; a rank's GPU
// is its local rank modulo the visible GPU count. Works in a CPU-only build (no GPU is ever visible there).
#pragma once

#include <string>
#include <string_view>

namespace mirror::nn {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // CUDA ordinal; 0 for the CPU

  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool is_cuda() const { return kind == DeviceKind::kCuda; }
  friend bool operator==(const Device&, const Device&) = default;
};

// "cpu" or "cuda:N".
std::string to_string(const Device& device);

// True when this build has the CUDA parts (MIRROR_HAVE_CUDA).
bool built_with_cuda();

// Number of CUDA GPUs this process can see; 0 in a CPU-only build, without a driver or without a GPU.
// Never throws.
int cuda_device_count();

// What a program asks for (`--device`); parsed once at the command line.
enum class DeviceRequest { kAuto, kCpu, kCuda };
const char* to_string(DeviceRequest request);
// "auto" | "cpu" | "cuda"; anything else throws kInvalidArgument naming the string and the accepted values.
DeviceRequest parse_device_request(std::string_view name);

// Resolves "auto", "cpu" or "cuda" for the rank with this local rank (rank within its node):
//   cuda: GPU local_rank % cuda_device_count(), made current with cudaSetDevice;
//         throws kInvalidArgument "device cuda requested but no CUDA GPU is visible" without one.
//   cpu:  sets the CPU kernels' thread count to cpu_threads (one per rank by default, so N ranks on a
//         node do not oversubscribe its cores).
//   auto: cuda when a GPU is visible, else cpu.
Device resolve_device(DeviceRequest request, int local_rank, int cpu_threads = 1);
// The same from the name (parse_device_request's errors).
Device resolve_device(std::string_view name, int local_rank, int cpu_threads = 1);

// Threads used by CPU kernels: OpenMP's, which oneDNN runs on (the setting belongs to the calling thread and
// the threads it starts: call it from the thread that computes). >= 1, else kInvalidArgument.
void set_cpu_threads(int threads);
int cpu_threads();

// Waits until all work queued on the device is done (no-op on the CPU).
void synchronize(const Device& device);

}  // namespace mirror::nn
