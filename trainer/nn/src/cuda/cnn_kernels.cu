// cnn_kernels.cu — cnn_kernels_cuda.h: BatchNorm2d's and global average pooling's CUDA kernels.
#include "cnn_kernels_cuda.h"
#include "launch_cuda.h"

namespace mirror::nn::detail::cuda {
namespace {

// Sum of the block's values in a fixed tree order (deterministic; launch_cuda.h).
__device__ double block_sum(double v) {
  __shared__ double part[kThreads];
  return block_reduce(v, part, Sum{});
}

// One block per channel (blockIdx.x), the block's threads stride over the channel's n·area values.
__global__ void bn_channel_sums_kernel(BnSum what, const float* x, const float* dy, const double* mean,
                                       std::int64_t n, std::int64_t channels, std::int64_t area, double* out) {
  const std::int64_t c = blockIdx.x;
  const double m = (what == BnSum::kSquaredDeviation || what == BnSum::kGradientTimesDeviation) ? mean[c] : 0.0;
  double acc = 0.0;
  for (std::int64_t k = threadIdx.x; k < n * area; k += blockDim.x) {
    const std::int64_t at = ((k / area) * channels + c) * area + k % area;
    switch (what) {
      case BnSum::kValue: acc += x[at]; break;
      case BnSum::kSquaredDeviation: {
        const double d = x[at] - m;
        acc += d * d;
        break;
      }
      case BnSum::kGradient: acc += dy[at]; break;
      case BnSum::kGradientTimesDeviation: acc += static_cast<double>(dy[at]) * (x[at] - m); break;
    }
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) out[c] = total;
}

__global__ void bn_normalise_kernel(const float* x, const float* hi, const float* lo, const float* scale,
                                    const float* shift, std::int64_t total, std::int64_t channels, std::int64_t area,
                                    float* y) {
  MIRROR_GRID_LOOP(i, total) {
    const std::int64_t c = (i / area) % channels;
    y[i] = ((x[i] - hi[c]) - lo[c]) * scale[c] + shift[c];
  }
}

__global__ void bn_input_gradient_kernel(const float* dy, const float* x, const float* hi, const float* lo,
                                         const float* inv_std, const float* scale, const float* mean_dy,
                                         const float* mean_dyx, std::int64_t total, std::int64_t channels,
                                         std::int64_t area, float* dx) {
  MIRROR_GRID_LOOP(i, total) {
    const std::int64_t c = (i / area) % channels;
    const float xhat = ((x[i] - hi[c]) - lo[c]) * inv_std[c];
    dx[i] = scale[c] * (dy[i] - mean_dy[c] - xhat * mean_dyx[c]);
  }
}

__global__ void gap_forward_kernel(const float* x, std::int64_t area, float* y) {
  const std::int64_t p = blockIdx.x;
  double acc = 0.0;
  for (std::int64_t i = threadIdx.x; i < area; i += blockDim.x) acc += x[p * area + i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) y[p] = static_cast<float>(total / static_cast<double>(area));
}

__global__ void gap_backward_kernel(const float* dy, std::int64_t total, std::int64_t area, float* dx) {
  MIRROR_GRID_LOOP(i, total) { dx[i] = dy[i / area] / static_cast<float>(area); }
}

}  // namespace

void bn_channel_sums(BnSum what, const float* x, const float* dy, const double* mean, std::int64_t n,
                     std::int64_t channels, std::int64_t area, double* out) {
  bn_channel_sums_kernel<<<static_cast<unsigned>(channels), kThreads>>>(what, x, dy, mean, n, channels, area, out);
  check_launch();
}

void bn_normalise(const float* x, const float* hi, const float* lo, const float* scale, const float* shift,
                  std::int64_t n, std::int64_t channels, std::int64_t area, float* y) {
  const std::int64_t total = n * channels * area;
  bn_normalise_kernel<<<blocks_for(total), kThreads>>>(x, hi, lo, scale, shift, total, channels, area, y);
  check_launch();
}

void bn_input_gradient(const float* dy, const float* x, const float* hi, const float* lo, const float* inv_std,
                       const float* scale, const float* mean_dy, const float* mean_dyx, std::int64_t n,
                       std::int64_t channels, std::int64_t area, float* dx) {
  const std::int64_t total = n * channels * area;
  bn_input_gradient_kernel<<<blocks_for(total), kThreads>>>(dy, x, hi, lo, inv_std, scale, mean_dy, mean_dyx, total,
                                                            channels, area, dx);
  check_launch();
}

void global_avg_pool_forward(const float* x, std::int64_t planes, std::int64_t area, float* y) {
  gap_forward_kernel<<<static_cast<unsigned>(planes), kThreads>>>(x, area, y);
  check_launch();
}

void global_avg_pool_backward(const float* dy, std::int64_t planes, std::int64_t area, float* dx) {
  const std::int64_t total = planes * area;
  gap_backward_kernel<<<blocks_for(total), kThreads>>>(dy, total, area, dx);
  check_launch();
}

}  // namespace mirror::nn::detail::cuda
