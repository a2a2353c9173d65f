// dropout_hash.h (private) — Dropout's counter-based draw (mirror/nn/dropout.h), one definition for the host
// and for CUDA kernels, so that the CPU and the GPU masks are the same bits: splitmix64 finalisers
// (splitmix64.h) chained over (seed, step, sample) into a row key, once per sample, and then over the
// element's index within the sample; the top 24 bits make a float in [0, 1) exactly.
#pragma once

#include <cstdint>

#include "splitmix64.h"

namespace mirror::nn::detail {

// The key of one sample's row of the mask.
MIRROR_NN_HOST_DEVICE inline std::uint64_t dropout_row_key(std::uint64_t seed, std::int64_t step, std::int64_t sample) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(step));
  return splitmix64(h ^ static_cast<std::uint64_t>(sample));
}

// The draw in [0, 1) of element `element` of the row keyed `row_key`.
MIRROR_NN_HOST_DEVICE inline float dropout_uniform_in_row(std::uint64_t row_key, std::int64_t element) {
  const std::uint64_t h = splitmix64(row_key ^ static_cast<std::uint64_t>(element));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

}  // namespace mirror::nn::detail
