// mirror/train/grad_compression.h — gradients sent in 16 bits (--grad-dtype bf16|fp16): the wire type of
// each --grad-dtype, the conversions between the float32 gradients and the 16-bit buffer that is reduced
// (with fp16's loss scale folded in), and fp16's dynamic loss scale.
//
// The rule (docs/training.md, "Compressed gradients"): with q(x) the round trip float32 -> 16 bits (round to
// nearest even) -> float32, S the loss scale (1 for bf16) and g_r rank r's float32 gradient (the mean over
// its own samples), the gradient the optimizer sees is
//     g = (1/S) * q( (sum over r in rank order of q(S * g_r)) / N )      (host backends: the sum in float32)
// At N = 1 that is (1/S) * q(S * g): the trainer rounds the same way with no collective, so N x B ~ 1 x N*B
// holds for each --grad-dtype as it does for fp32. S is a power of two, so multiplying by S and 1/S is exact.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mirror/coll/types.h"
#include "mirror/nn/device.h"
#include "mirror/train/config.h"

namespace mirror::train {

// kFloat32, kBFloat16 or kFloat16.
coll::DataType wire_type(GradDtype dtype);

// out[i] = 16-bit(scale * in[i]) for i < n; type is kBFloat16 or kFloat16; in and out are memory of `device`.
void narrow_gradients(const nn::Device& device, const float* in, std::uint16_t* out, std::size_t n,
                      coll::DataType type, float scale);
// out[i] = float32(in[i]) * inv_scale.
void widen_gradients(const nn::Device& device, const std::uint16_t* in, float* out, std::size_t n, coll::DataType type,
                     float inv_scale);

// fp16's dynamic loss scale, as torch.cuda.amp.GradScaler and Horovod keep it: the gradients are multiplied
// by scale() before they are rounded to float16 (so small ones do not vanish) and divided by it after the
// reduction. A step whose reduced gradients hold an Inf or NaN (float16 overflowed) is skipped and the scale
// halves; after growth_interval good steps in a row it doubles (at most 2^24). Every rank sees the same
// reduced gradients' verdict, so every rank holds the same scale. At scale 1 an overflow is not the scale's
// fault: can_skip() is false and the trainer stops as for any non-finite gradient.
class LossScaler {
 public:
  static constexpr double kMaxScale = 16777216.0;  // 2^24
  LossScaler() = default;  // disabled: scale 1, nothing skipped
  LossScaler(double initial_scale, std::int64_t growth_interval);

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  std::int64_t good_steps() const { return good_steps_; }
  bool can_skip() const { return enabled_ && scale_ > 1.0; }
  void on_good_step();
  void on_overflow();  // needs can_skip()
  // The state a checkpoint keeps.
  void restore(double scale, std::int64_t good_steps);

 private:
  bool enabled_ = false;
  double scale_ = 1.0;
  std::int64_t growth_interval_ = 2000;
  std::int64_t good_steps_ = 0;
};

}  // namespace mirror::train
