// device.cc — cuda_device_count() (0 when there is no GPU, no driver, or no CUDA in this build) and
// DeviceBuffer.
#include "mirror/coll/device.h"

#include "mirror/error.h"

#ifdef MIRROR_HAVE_CUDA
#include "nccl_check.h"
#endif

namespace mirror::coll {

int cuda_device_count() noexcept {
#ifdef MIRROR_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the "no driver" error
    return 0;
  }
  return n > 0 ? n : 0;
#else
  return 0;
#endif
}

#ifdef MIRROR_HAVE_CUDA
DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) MIRROR_CHECK_CUDA(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  MIRROR_CHECK(bytes <= bytes_, kInvalidArgument, "DeviceBuffer::upload: " << bytes << " bytes into a buffer of " << bytes_);
  if (bytes > 0) MIRROR_CHECK_CUDA(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}
void DeviceBuffer::download(void* host, std::size_t bytes) const {
  MIRROR_CHECK(bytes <= bytes_, kInvalidArgument, "DeviceBuffer::download: " << bytes << " bytes from a buffer of " << bytes_);
  if (bytes > 0) MIRROR_CHECK_CUDA(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
}
#else
DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  MIRROR_THROW(kInvalidArgument, "DeviceBuffer: this build has no CUDA (MIRROR_WITH_CUDA=OFF or no toolkit)");
}
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(const void*, std::size_t) {}
void DeviceBuffer::download(void*, std::size_t) const {}
#endif

}  // namespace mirror::coll
