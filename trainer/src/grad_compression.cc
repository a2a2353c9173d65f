// grad_compression.cc — --grad-dtype's wire types, the scaled 16-bit conversions (CPU: branch-free loops
// that vectorise, equal to coll/half.h's; CUDA: nn's kernels) and the dynamic loss scale.
#include "mirror/train/grad_compression.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mirror/error.h"
#include "mirror/nn/half_cast.h"

namespace mirror::train {
namespace {

void check_16bit(coll::DataType type) {
  MIRROR_CHECK(type == coll::DataType::kBFloat16 || type == coll::DataType::kFloat16, kInternal,
               "gradients are narrowed to bfloat16 or float16, not " << coll::to_string(type));
}

// Branch-free scalar forms of coll/half.h's round-to-nearest-even conversions, which the compiler turns into
// vector code (coll/half.h's per-value branches keep its loops scalar: 3-7x slower on the gradients). They
// give the same 16-bit value for every float except NaN payloads (any NaN stays a NaN): the unit test
// checks them bit for bit against coll/half.h over a sweep of float32 bit patterns.
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// All ones when `condition`, else zero: selects by masks keep the loops free of branches for the vectoriser.
std::uint32_t mask(bool condition) { return 0u - static_cast<std::uint32_t>(condition); }
std::uint32_t pick(std::uint32_t m, std::uint32_t yes, std::uint32_t no) { return (yes & m) | (no & ~m); }

std::uint16_t to_bf16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(pick(mask((u & 0x7FFFFFFFu) > 0x7F800000u), (u >> 16) | 0x40u, rounded));
}

// float16: values below 2^-14 (float16 subnormals) are rounded by adding 0.5f, whose unit in the last place
// is 2^-24 (float16's subnormal step), so the float addition's own round-to-nearest-even does it and the
// difference of the bits is the subnormal's mantissa; normal values by adding the rebias and 0xFFF plus the
// odd bit (ties to even) to the bits, a carry moving into the exponent.
std::uint16_t to_fp16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const float magic = float_of(126u << 23);  // 0.5: its unit in the last place is 2^-24
  const std::uint32_t sub = bits_of(float_of(a) + magic) - (126u << 23);
  const std::uint32_t norm = (a + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
  std::uint32_t h = pick(mask(a < (113u << 23)), sub, norm);
  h = pick(mask(a >= 0x477FF000u), 0x7C00u, h);  // rounds to 65520 or more: infinity
  h = pick(mask(a > 0x7F800000u), 0x7E00u, h);   // NaN
  return static_cast<std::uint16_t>(sign | h);
}

float from_bf16(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

// float16 -> float32: shift the exponent and mantissa into place and rebias; infinities and NaN get the
// full exponent; subnormals (exponent 0) are renormalised by a float subtraction of 2^-14.
float from_fp16(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t shifted = static_cast<std::uint32_t>(h & 0x7FFFu) << 13;
  const std::uint32_t exp = shifted & (0x1Fu << 23);
  const std::uint32_t normal = shifted + (static_cast<std::uint32_t>(127 - 15) << 23);
  const std::uint32_t special = normal + (static_cast<std::uint32_t>(128 - 16) << 23);  // Inf, NaN
  const std::uint32_t subnormal = bits_of(float_of(normal + (1u << 23)) - float_of(113u << 23));
  const std::uint32_t v = pick(mask(exp == (0x1Fu << 23)), special, pick(mask(exp == 0), subnormal, normal));
  return float_of(sign | v);
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
  if (half) {
    for (std::size_t i = 0; i < n; ++i) out[i] = to_fp16(in[i] * scale);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = to_bf16(in[i] * scale);
  }
}

void widen_gradients(const nn::Device& device, const std::uint16_t* in, float* out, std::size_t n, coll::DataType type,
                     float inv_scale) {
  check_16bit(type);
  const bool half = type == coll::DataType::kFloat16;
  if (device.is_cuda()) return nn::widen_from_16bit(device, in, out, n, half, inv_scale);
  if (half) {
    for (std::size_t i = 0; i < n; ++i) out[i] = from_fp16(in[i]) * inv_scale;
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]) * inv_scale;
  }
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
