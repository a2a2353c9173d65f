// cnn_kernels_cuda.h (private) — the CUDA kernels of the CNN layers that cuDNN does not cover, as plain
// launchers over device pointers (cnn_kernels.cu): BatchNorm2d's per-channel sums and element-wise passes
// (batch_norm2d_cuda.cc wraps them) and global average pooling. All on the legacy default stream. The
// per-channel sums run one block per channel with a fixed reduction tree in double, so they repeat bit for bit.
#pragma once

#include <cstdint>

namespace mirror::nn::detail::cuda {

// What the per-channel sum adds for each element x (and dy) of channel c.
enum class BnSum { kValue, kSquaredDeviation, kGradient, kGradientTimesDeviation };

// out[c] (device, double) = Σ over channel c of: x | (x − mean[c])² | dy | dy · (x − mean[c]).
// mean: device doubles [C] (unused for kValue / kGradient); dy may be null for the first two.
void bn_channel_sums(BnSum what, const float* x, const float* dy, const double* mean, std::int64_t n,
                     std::int64_t channels, std::int64_t area, double* out);

// y = ((x − hi[c]) − lo[c]) · scale[c] + shift[c]; per-channel arrays are device floats [C].
void bn_normalise(const float* x, const float* hi, const float* lo, const float* scale, const float* shift,
                  std::int64_t n, std::int64_t channels, std::int64_t area, float* y);

// dx = scale[c] · (dy − mean_dy[c] − ((x − hi[c]) − lo[c]) · inv_std[c] · mean_dyx[c]).
void bn_input_gradient(const float* dy, const float* x, const float* hi, const float* lo, const float* inv_std,
                       const float* scale, const float* mean_dy, const float* mean_dyx, std::int64_t n,
                       std::int64_t channels, std::int64_t area, float* dx);

// y[p] = mean of plane p (planes = N·C, each `area` values); dx[p, i] = dy[p] / area.
void global_avg_pool_forward(const float* x, std::int64_t planes, std::int64_t area, float* y);
void global_avg_pool_backward(const float* dy, std::int64_t planes, std::int64_t area, float* dx);

}  // namespace mirror::nn::detail::cuda
