// grad_norm_cuda.cu — the CUDA sum of squares behind nn::sum_of_squares (grad_norm.cc): a fixed grid of blocks,
// each thread summing its grid-stride elements' squares in double, each block a fixed tree, and the blocks' sums
// added on the host in order; the grid depends only on n, so a run repeats bit for bit.
#include <cstdint>
#include <vector>

#include "launch_cuda.h"
#include "scratch_cuda.h"

namespace mirror::nn::detail::cuda {
namespace {

constexpr int kMaxBlocks = 1024;

__global__ void sum_of_squares_kernel(const float* x, std::int64_t n, double* partial) {
  __shared__ double shared[kThreads];
  double sum = 0.0;
  MIRROR_GRID_LOOP(i, n) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  sum = block_reduce(sum, shared, Sum{});
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

}  // namespace

double sum_of_squares(const float* x, std::int64_t n) {
  if (n <= 0) return 0.0;
  const std::int64_t wanted = (n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
  auto* partial = static_cast<double*>(scratch(Scratch::kGradNorm, static_cast<std::size_t>(blocks) * sizeof(double)));
  sum_of_squares_kernel<<<blocks, kThreads>>>(x, n, partial);
  check_launch();
  std::vector<double> host(static_cast<std::size_t>(blocks));
  MIRROR_CHECK_CUDA(cudaMemcpy(host.data(), partial, host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (double p : host) sum += p;
  return sum;
}

}  // namespace mirror::nn::detail::cuda
