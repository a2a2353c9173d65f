// runtime_cuda.cc — the CUDA backend's runtime side: GPU count, device choice, memory, copies,
// synchronisation and the cuBLAS handle. All work goes to the legacy default stream.
#include <array>
#include <mutex>

#include "../backend.h"
#include "cuda_check.h"

namespace mirror::nn::detail::cuda {

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver / no device" error
    return 0;
  }
  return count;
}

void set_device(int index) { MIRROR_CHECK_CUDA(cudaSetDevice(index)); }

void* allocate(std::size_t bytes) {
  void* p = nullptr;
  MIRROR_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

void release(void* p) noexcept { (void)cudaFree(p); }

void copy_h2d(void* dst, const void* src, std::size_t bytes) {
  MIRROR_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void copy_d2h(void* dst, const void* src, std::size_t bytes) {
  MIRROR_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void copy_d2d(void* dst, const void* src, std::size_t bytes) {
  MIRROR_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

void copy_d2d_rows(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
                   std::size_t rows) {
  MIRROR_CHECK_CUDA(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDeviceToDevice, 0));
}

void synchronize() { MIRROR_CHECK_CUDA(cudaDeviceSynchronize()); }

cublasHandle_t cublas_handle() {
  static std::mutex mutex;
  static std::array<cublasHandle_t, 64> handles{};
  int device = 0;
  MIRROR_CHECK_CUDA(cudaGetDevice(&device));
  MIRROR_CHECK(device >= 0 && device < static_cast<int>(handles.size()), kInternal,
               "CUDA device ordinal " << device << " out of the supported range");
  std::lock_guard lock(mutex);
  if (!handles[device]) {
    MIRROR_CHECK_CUBLAS(cublasCreate(&handles[device]));
    // Plain FP32 arithmetic (no TF32), so CUDA results stay within float rounding of the CPU's.
    MIRROR_CHECK_CUBLAS(cublasSetMathMode(handles[device], CUBLAS_DEFAULT_MATH));
  }
  return handles[device];
}

}  // namespace mirror::nn::detail::cuda
