// mirror/nn/grad_norm.h — the sum of squares of a float buffer of either device, in double, for gradient-norm
// clipping (the trainer's --grad-clip: the L2 norm of the averaged gradient, as PyTorch's clip_grad_norm_).
// The sum is taken in a fixed order, so the same buffer gives the same norm on every run.
#pragma once

#include <cstdint>

#include "mirror/nn/device.h"

namespace mirror::nn {

// Σ x[i]², 0 <= i < n (x is memory of `device`; CUDA buffers are copied to the host for it).
double sum_of_squares(const Device& device, const float* x, std::int64_t n);

}  // namespace mirror::nn
