// half_cast_cuda.cu — the CUDA kernels of mirror/nn/half_cast.h: grid-stride scaled conversions between
// float32 and float16/bfloat16 with round-to-nearest-even, on the default stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "cuda_check.h"

namespace mirror::nn::detail::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 4096 ? blocks : 4096);
}

__global__ void narrow_kernel(const float* in, std::uint16_t* out, std::size_t n, bool half, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(blockDim.x) * gridDim.x) {
    const float v = in[i] * scale;
    out[i] = half ? __half_as_ushort(__float2half_rn(v)) : __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
}

__global__ void widen_kernel(const std::uint16_t* in, float* out, std::size_t n, bool half, float inv_scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(blockDim.x) * gridDim.x) {
    const float v = half ? __half2float(__ushort_as_half(in[i])) : __bfloat162float(__ushort_as_bfloat16(in[i]));
    out[i] = v * inv_scale;
  }
}

}  // namespace

void narrow_to_16bit(const float* in, std::uint16_t* out, std::size_t n, bool half, float scale) {
  narrow_kernel<<<blocks_for(n), kThreads>>>(in, out, n, half, scale);
  MIRROR_CHECK_CUDA(cudaGetLastError());
}

void widen_from_16bit(const std::uint16_t* in, float* out, std::size_t n, bool half, float inv_scale) {
  widen_kernel<<<blocks_for(n), kThreads>>>(in, out, n, half, inv_scale);
  MIRROR_CHECK_CUDA(cudaGetLastError());
}

}  // namespace mirror::nn::detail::cuda
