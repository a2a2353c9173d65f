// grad_compression.cc — --grad-dtype's wire types, the scaled 16-bit conversions (CPU: coll/half.h's vector
// builds, the scale folded into the same pass; CUDA: nn's kernels) and the dynamic loss scale.
#include "mirror/train/grad_compression.h"

#include <algorithm>
#include <cmath>

#include "mirror/coll/half.h"
#include "mirror/error.h"
#include "mirror/nn/half_cast.h"

namespace mirror::train {
namespace {

void check_16bit(coll::DataType type) {
  MIRROR_CHECK(type == coll::DataType::kBFloat16 || type == coll::DataType::kFloat16, kInternal,
               "gradients are narrowed to bfloat16 or float16, not " << coll::to_string(type));
}

}  // namespace

coll::DataType wire_type(GradDtype dtype) {
  switch (dtype) {
    case GradDtype::kFp32: return coll::DataType::kFloat32;
    case GradDtype::kBf16: return coll::DataType::kBFloat16;
    case GradDtype::kFp16: return coll::DataType::kFloat16;
  }
  MIRROR_THROW(kInternal, "unknown --grad-dtype value " << static_cast<int>(dtype));
}

void narrow_gradients(const nn::Device& device, const float* in, std::uint16_t* out, std::size_t n,
                      coll::DataType type, float scale) {
  check_16bit(type);
  const bool half = type == coll::DataType::kFloat16;
  if (device.is_cuda()) return nn::narrow_to_16bit(device, in, out, n, half, scale);
  if (half) return coll::float_to_half_scaled(in, out, n, scale);
  coll::float_to_bfloat16_scaled(in, out, n, scale);
}

void widen_gradients(const nn::Device& device, const std::uint16_t* in, float* out, std::size_t n, coll::DataType type,
                     float inv_scale) {
  check_16bit(type);
  const bool half = type == coll::DataType::kFloat16;
  if (device.is_cuda()) return nn::widen_from_16bit(device, in, out, n, half, inv_scale);
  if (half) return coll::half_to_float_scaled(in, out, n, inv_scale);
  coll::bfloat16_to_float_scaled(in, out, n, inv_scale);
}

LossScaler::LossScaler(double initial_scale, std::int64_t growth_interval)
    : enabled_(true), scale_(initial_scale), growth_interval_(growth_interval) {
  int exponent = 0;
  MIRROR_CHECK(initial_scale >= 1.0 && initial_scale <= kMaxScale && std::frexp(initial_scale, &exponent) == 0.5,
               kInvalidArgument, "the loss scale must be a power of two from 1 to 2^24, got " << initial_scale);
  MIRROR_CHECK(growth_interval >= 1, kInvalidArgument, "the loss scale's growth interval must be >= 1 step");
}

void LossScaler::on_good_step() {
  if (!enabled_) return;
  if (++good_steps_ < growth_interval_) return;
  good_steps_ = 0;
  scale_ = std::min(scale_ * 2.0, kMaxScale);
}

void LossScaler::on_overflow() {
  MIRROR_CHECK(can_skip(), kInternal, "loss scale overflow at scale " << scale_);
  scale_ /= 2.0;
  good_steps_ = 0;
}

void LossScaler::restore(double scale, std::int64_t good_steps) {
  if (!enabled_) return;
  int exponent = 0;
  MIRROR_CHECK(scale >= 1.0 && scale <= kMaxScale && std::frexp(scale, &exponent) == 0.5 && good_steps >= 0,
               kFormat, "loss scale " << scale << " with " << good_steps << " good steps is not a valid state");
  scale_ = scale;
  good_steps_ = good_steps;
}

}  // namespace mirror::train
