// lm_kernels.cu — lm_kernels_cuda.h: grid-stride element kernels, one block per row for LayerNorm's statistics
// (a fixed tree in shared memory, in double), the parameter sums over fixed chunks of rows, then over chunks.
#include <algorithm>
#include <cstdint>

#include "launch_cuda.h"
#include "lm_kernels_cuda.h"
#include "scratch_cuda.h"

namespace mirror::nn::detail::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
// LayerNorm's parameter sums run in two stages, so that a GPU gets channels × rows/kLayerNormRowsPerChunk threads
// rather than one per channel; the chunking depends only on the shape, so the sums repeat bit for bit.
constexpr std::int64_t kLayerNormRowsPerChunk = 64;

__global__ void gelu_forward_kernel(const float* x, float* y, std::int64_t n) {
  MIRROR_GRID_LOOP(i, n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kCubic * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, std::int64_t n) {
  MIRROR_GRID_LOOP(i, n) {
    const float v = x[i];
    const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float inner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * inner);
  }
}

__global__ void layernorm_forward_kernel(const float* x, const float* gamma, const float* beta, std::int64_t channels,
                                         float eps, float* xhat, float* y, float* mean_out, float* rstd_out) {
  __shared__ double shared[kThreads];
  const std::int64_t r = blockIdx.x;
  const float* row = x + r * channels;
  double sum = 0.0;
  for (std::int64_t j = threadIdx.x; j < channels; j += blockDim.x) sum += row[j];
  const double mean = block_reduce(sum, shared, Sum{}) / static_cast<double>(channels);
  double sq = 0.0;
  for (std::int64_t j = threadIdx.x; j < channels; j += blockDim.x) sq += (row[j] - mean) * (row[j] - mean);
  const double var = block_reduce(sq, shared, Sum{}) / static_cast<double>(channels);
  const float m = static_cast<float>(mean);
  const float rstd = static_cast<float>(1.0 / sqrt(var + eps));
  if (threadIdx.x == 0) {
    mean_out[r] = m;
    rstd_out[r] = rstd;
  }
  for (std::int64_t j = threadIdx.x; j < channels; j += blockDim.x) {
    const float h = (row[j] - m) * rstd;
    xhat[r * channels + j] = h;
    y[r * channels + j] = h * gamma[j] + beta[j];
  }
}

// Stage 1: thread (chunk, j) sums rows [chunk·kLayerNormRowsPerChunk, …) of channel j in double, rows in order.
__global__ void layernorm_partial_sums_kernel(const float* dy, const float* xhat, std::int64_t rows,
                                              std::int64_t channels, std::int64_t chunks, double* partial) {
  MIRROR_GRID_LOOP(i, chunks * channels) {
    const std::int64_t chunk = i / channels, j = i % channels;
    const std::int64_t end = rows < (chunk + 1) * kLayerNormRowsPerChunk ? rows : (chunk + 1) * kLayerNormRowsPerChunk;
    double db = 0.0, dg = 0.0;
    for (std::int64_t r = chunk * kLayerNormRowsPerChunk; r < end; ++r) {
      db += dy[r * channels + j];
      dg += static_cast<double>(dy[r * channels + j]) * xhat[r * channels + j];
    }
    partial[2 * i] = db;
    partial[2 * i + 1] = dg;
  }
}

// Stage 2: thread j adds channel j's chunk sums in chunk order.
__global__ void layernorm_parameter_grads_kernel(const double* partial, std::int64_t channels, std::int64_t chunks,
                                                 bool accumulate, float* dgamma, float* dbeta) {
  MIRROR_GRID_LOOP(j, channels) {
    double db = 0.0, dg = 0.0;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      db += partial[2 * (chunk * channels + j)];
      dg += partial[2 * (chunk * channels + j) + 1];
    }
    dbeta[j] = static_cast<float>(db + (accumulate ? dbeta[j] : 0.0f));
    dgamma[j] = static_cast<float>(dg + (accumulate ? dgamma[j] : 0.0f));
  }
}

__global__ void layernorm_input_grad_kernel(const float* dy, const float* xhat, const float* gamma, const float* rstd,
                                            std::int64_t channels, float* dx) {
  __shared__ double shared[kThreads];
  const std::int64_t r = blockIdx.x;
  double g_sum = 0.0, gx_sum = 0.0;
  for (std::int64_t j = threadIdx.x; j < channels; j += blockDim.x) {
    const double g = static_cast<double>(dy[r * channels + j]) * gamma[j];
    g_sum += g;
    gx_sum += g * xhat[r * channels + j];
  }
  const double mean_g = block_reduce(g_sum, shared, Sum{}) / static_cast<double>(channels);
  const double mean_gx = block_reduce(gx_sum, shared, Sum{}) / static_cast<double>(channels);
  for (std::int64_t j = threadIdx.x; j < channels; j += blockDim.x) {
    const double g = static_cast<double>(dy[r * channels + j]) * gamma[j];
    dx[r * channels + j] = static_cast<float>(rstd[r] * (g - mean_g - xhat[r * channels + j] * mean_gx));
  }
}

__global__ void embedding_forward_kernel(const std::int32_t* ids, const float* table, std::int64_t positions,
                                         std::int64_t channels, float* y) {
  MIRROR_GRID_LOOP(i, positions * channels) {
    const std::int64_t p = i / channels, j = i % channels;
    y[i] = table[static_cast<std::int64_t>(ids[p]) * channels + j];
  }
}

__global__ void embedding_backward_kernel(const float* dy, const std::int32_t* order, const std::int32_t* starts,
                                          const std::int32_t* tokens, std::int64_t distinct, std::int64_t channels,
                                          bool accumulate, float* grad) {
  MIRROR_GRID_LOOP(i, distinct * channels) {
    const std::int64_t t = i / channels, j = i % channels;
    float* out = grad + static_cast<std::int64_t>(tokens[t]) * channels + j;
    float sum = accumulate ? *out : 0.0f;
    for (std::int32_t k = starts[t]; k < starts[t + 1]; ++k) sum += dy[static_cast<std::int64_t>(order[k]) * channels + j];
    *out = sum;
  }
}

__global__ void position_embedding_forward_kernel(const float* x, const float* table, std::int64_t total,
                                                  std::int64_t per_sample, float* y) {
  MIRROR_GRID_LOOP(i, total) y[i] = x[i] + table[i % per_sample];
}

__global__ void position_embedding_backward_kernel(const float* dy, std::int64_t batch, std::int64_t per_sample,
                                                   bool accumulate, float* grad) {
  MIRROR_GRID_LOOP(i, per_sample) {
    float sum = accumulate ? grad[i] : 0.0f;
    for (std::int64_t n = 0; n < batch; ++n) sum += dy[n * per_sample + i];
    grad[i] = sum;
  }
}

}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  check_launch();
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<blocks_for(n), kThreads>>>(x, dy, dx, n);
  check_launch();
}

void layernorm_forward(const float* x, const float* gamma, const float* beta, std::int64_t rows,
                       std::int64_t channels, float eps, float* xhat, float* y, float* mean, float* rstd) {
  if (rows == 0) return;
  layernorm_forward_kernel<<<static_cast<unsigned>(rows), kThreads>>>(x, gamma, beta, channels, eps, xhat, y, mean,
                                                                      rstd);
  check_launch();
}

void layernorm_parameter_grads(const float* dy, const float* xhat, std::int64_t rows, std::int64_t channels,
                               bool accumulate, float* dgamma, float* dbeta) {
  if (channels == 0) return;
  const std::int64_t chunks = std::max<std::int64_t>((rows + kLayerNormRowsPerChunk - 1) / kLayerNormRowsPerChunk, 1);
  auto* partial = static_cast<double*>(
      scratch(Scratch::kLayerNormPartials, static_cast<std::size_t>(2 * chunks * channels) * sizeof(double)));
  layernorm_partial_sums_kernel<<<blocks_for(chunks * channels), kThreads>>>(dy, xhat, rows, channels, chunks, partial);
  check_launch();
  layernorm_parameter_grads_kernel<<<blocks_for(channels), kThreads>>>(partial, channels, chunks, accumulate, dgamma,
                                                                       dbeta);
  check_launch();
}

void layernorm_input_grad(const float* dy, const float* xhat, const float* gamma, const float* rstd, std::int64_t rows,
                          std::int64_t channels, float* dx) {
  if (rows == 0) return;
  layernorm_input_grad_kernel<<<static_cast<unsigned>(rows), kThreads>>>(dy, xhat, gamma, rstd, channels, dx);
  check_launch();
}

void embedding_forward(const std::int32_t* ids, const float* table, std::int64_t positions, std::int64_t channels,
                       float* y) {
  if (positions == 0) return;
  embedding_forward_kernel<<<blocks_for(positions * channels), kThreads>>>(ids, table, positions, channels, y);
  check_launch();
}

void embedding_backward(const float* dy, const std::int32_t* order, const std::int32_t* starts,
                        const std::int32_t* tokens, std::int64_t distinct, std::int64_t channels, bool accumulate,
                        float* grad) {
  if (distinct == 0) return;
  embedding_backward_kernel<<<blocks_for(distinct * channels), kThreads>>>(dy, order, starts, tokens, distinct,
                                                                           channels, accumulate, grad);
  check_launch();
}

void position_embedding_forward(const float* x, const float* table, std::int64_t batch, std::int64_t positions,
                                std::int64_t channels, float* y) {
  const std::int64_t total = batch * positions * channels;
  if (total == 0) return;
  position_embedding_forward_kernel<<<blocks_for(total), kThreads>>>(x, table, total, positions * channels, y);
  check_launch();
}

void position_embedding_backward(const float* dy, std::int64_t batch, std::int64_t positions, std::int64_t channels,
                                 bool accumulate, float* grad) {
  const std::int64_t per_sample = positions * channels;
  if (per_sample == 0) return;
  position_embedding_backward_kernel<<<blocks_for(per_sample), kThreads>>>(dy, batch, per_sample, accumulate, grad);
  check_launch();
}

}  // namespace mirror::nn::detail::cuda
