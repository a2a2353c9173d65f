// bn_hand_over.h (private) — what a BatchNorm2d and the layer that consumes its output hand each other on the CPU,
// so that the normalised tensor is never written. Forward: the BatchNorm computes its statistics and leaves its
// per-channel map y = ((x − hi) − lo)·scale + shift to the consumer, which applies it as it reads (the same
// expression, no FMA: the same bits); the BatchNorm's output is then its own input x. Two consumers:
// - the 2×2 stride-2 max pooling right after it (a ReLU between them absorbed by the pooling; chain_fusion.h):
//   pool2d_cpu_max2x2.cc normalises each window's four values. Backward: the pooling hands back its output
//   gradient and its winners instead of writing the full-size dx, and the BatchNorm's loops read the gradient of
//   each normalised value from them (batch_norm2d_cpu.cc: dy at a window's winner, +0 elsewhere: what the pooling
//   would have written, visited in the same order, so the same sums);
// - the residual block whose body it ends (residual.cc): the block's add (and its absorbed ReLU) normalises the
//   body's values as it adds the shortcut. Backward is unchanged: the block hands the BatchNorm a full dy.
// Only for blocked tensors (nChw8c / nChw16c), decided at each forward. tests/nn/test_bn_hand_over.cc checks both
// bit for bit against the layers apart.
#pragma once

#include <cstdint>

namespace mirror::nn::detail {

// y = ((x − hi[c]) − lo[c]) · scale[c] + shift[c] per channel c: BatchNorm2d's normalisation (C floats each).
struct ChannelAffine {
  const float *hi = nullptr, *lo = nullptr, *scale = nullptr, *shift = nullptr;
};

// The pooling's output gradient, in x's blocked layout (block b: [N·C/b][out_h][out_w][b]), and per output lane
// the position of its window's winner in the window as a float (0–3, row-major; 4 or more: no value of the window
// gets the gradient, as when the absorbed ReLU zeroed the output): floats, so that the BatchNorm's loops compare
// them in vectors as wide as their dy.
struct PooledGradient {
  const float* dy = nullptr;
  const float* winners = nullptr;
  std::int64_t out_h = 0, out_w = 0;  // the pooled plane
  std::int64_t in_w = 0;              // the width of x's plane (its height is the BatchNorm's own)
};

// One BatchNorm2d → consumer pair. Each forward the BatchNorm says whether it handed the map over (pending); after
// such a forward a pooling consumer leaves its gradient for the BatchNorm's backward.
struct NormalisationHandOver {
  bool pooled_gradient = false;  // the consumer is a max pooling, whose backward leaves `gradient`
  bool pending = false;          // the last forward's normalisation is the consumer's to apply
  ChannelAffine affine;          // valid while pending (the BatchNorm's vectors)
  PooledGradient gradient;       // set by the pooling's backward after a pending forward
};

}  // namespace mirror::nn::detail
