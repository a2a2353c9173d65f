// mirror/coll/device.h — what the collectives library can see of CUDA devices, and a minimal device
// buffer for the NCCL backend's callers that must not include CUDA headers themselves (tests,
// mirror-bench). Copies go through the legacy default stream, which the NCCL backend's stream is
// ordered with (see communicator.h).
#pragma once

#include <cstddef>

namespace mirror::coll {

// Number of CUDA devices visible to this process; 0 without a GPU, without a driver, or in a build
// without CUDA. Never throws.
int cuda_device_count() noexcept;

// Device memory on the calling thread's current CUDA device. Throws kCuda on failure, kInvalidArgument
// in a build without CUDA. The destructor never throws.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // Blocking copies of `bytes` (<= this->bytes()) from host memory / to host memory.
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace mirror::coll
