// mirror/nn/finite.h — counting the NaN and Inf values in a float buffer of either device, for the trainer's
// divergence check (a loss or gradient that turned non-finite stops the job, as Keras' TerminateOnNaN does).
// One pass over the buffer testing the exponent bits (all ones: Inf or NaN); on CUDA a kernel and a 8-byte
// copy back (it synchronises the device).
#pragma once

#include <cstdint>

#include "mirror/nn/device.h"

namespace mirror::nn {

// The number of x[i], 0 <= i < n, that are NaN or +-Inf (x is memory of `device`).
std::int64_t count_non_finite(const Device& device, const float* x, std::int64_t n);

}  // namespace mirror::nn
