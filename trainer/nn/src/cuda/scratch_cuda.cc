// scratch_cuda.cc — scratch_cuda.h: a table of grow-only device buffers, guarded by a mutex.
#include "scratch_cuda.h"

#include <array>
#include <mutex>

#include "cuda_check.h"

namespace mirror::nn::detail::cuda {

void* scratch(Scratch use, std::size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    std::size_t capacity = 0;
  };
  static std::mutex mutex;
  static std::array<Buffer, static_cast<std::size_t>(Scratch::kCount)> buffers;
  std::lock_guard lock(mutex);
  Buffer& b = buffers[static_cast<std::size_t>(use)];
  if (b.capacity < bytes) {
    if (b.data) MIRROR_CHECK_CUDA(cudaFree(b.data));  // waits for the kernels still using it
    b.data = nullptr;
    b.capacity = 0;
    MIRROR_CHECK_CUDA(cudaMalloc(&b.data, bytes));
    b.capacity = bytes;
  }
  return b.data;
}

}  // namespace mirror::nn::detail::cuda
