// finite_cuda.cu — count_non_finite on the GPU (mirror/nn/finite.h): a grid-stride count of the values whose
// exponent bits are all ones, summed with one atomic per thread into a device counter, copied back.
#include <cstdint>

#include "../backend.h"
#include "cuda_check.h"

namespace mirror::nn::detail::cuda {
namespace {

__global__ void count_non_finite_kernel(const float* x, std::int64_t n, unsigned long long* count) {
  unsigned long long bad = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)
    bad += (__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u;
  if (bad) atomicAdd(count, bad);
}

}  // namespace

std::int64_t count_non_finite(const float* x, std::int64_t n) {
  constexpr int kThreads = 256;
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  auto* count = static_cast<unsigned long long*>(allocate(sizeof(unsigned long long)));
  unsigned long long host = 0;
  try {
    MIRROR_CHECK_CUDA(cudaMemset(count, 0, sizeof(host)));
    count_non_finite_kernel<<<static_cast<int>(blocks < 1024 ? blocks : 1024), kThreads>>>(x, n, count);
    MIRROR_CHECK_CUDA(cudaGetLastError());
    copy_d2h(&host, count, sizeof(host));
  } catch (...) {
    release(count);
    throw;
  }
  release(count);
  return static_cast<std::int64_t>(host);
}

}  // namespace mirror::nn::detail::cuda
