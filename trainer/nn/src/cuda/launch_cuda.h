// launch_cuda.h (private; .cu files only) — what Mirror's CUDA kernels share: the block size, a grid for n
// elements, the grid-stride loop, the launch check, and a block-wide reduction in a fixed tree (the same order
// every run, so results repeat bit for bit).
#pragma once

#include <cstdint>

#include "cuda_check.h"

namespace mirror::nn::detail::cuda {

inline constexpr int kThreads = 256;

// Blocks for n elements at kThreads a block, at least 1 and at most 65535 (the grid-stride loop covers the rest).
inline int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

// Throws mirror::Error (kCuda) when the last launch failed.
inline void check_launch() { MIRROR_CHECK_CUDA(cudaGetLastError()); }

#define MIRROR_GRID_LOOP(i, n)                                                                     \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

// combine(all threads' values) over a block of kThreads threads, as a fixed tree in `shared` (kThreads values);
// every thread gets the result.
template <class T, class Combine>
__device__ T block_reduce(T value, T* shared, Combine combine) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();
  return result;
}

struct Sum {
  template <class T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

}  // namespace mirror::nn::detail::cuda
