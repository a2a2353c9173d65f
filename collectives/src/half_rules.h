// half_rules.h — the branch-free per-value forms of mirror/coll/half.h's conversions, shared by the generic
// build (half_generic.cc) and the vector builds' tails. Integer operations (and one exact subtraction of
// normal floats), so neither the rounding mode nor DAZ/FTZ changes a result; each equals half.cc's reference
// bit for bit, NaN included (the tests check every build against it). add2_one is the exception: the 2-input
// sum's float32 add and divide, in the current floating-point environment, as half.h says. Internal linkage: each including file gets its own
// copy, compiled for its own ISA.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace mirror::coll::detail {
namespace {

// All ones when `condition`, else zero; select() picks by such a mask. No branches for the vectoriser.
inline std::uint32_t mask_if(bool condition) { return 0u - static_cast<std::uint32_t>(condition); }
inline std::uint32_t select(std::uint32_t m, std::uint32_t yes, std::uint32_t no) { return (yes & m) | (no & ~m); }

// Round to nearest even by adding 0x7FFF plus the kept part's lowest bit; NaN: the top half, made quiet.
inline std::uint16_t bfloat16_of(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(select(mask_if((u & 0x7FFFFFFFu) > 0x7F800000u), (u >> 16) | 0x40u, rounded));
}

// float16. Normal results: rebias the exponent, add 0xFFF plus the odd bit (ties to even), drop 13 bits; a
// carry moves into the exponent. Subnormal results (|f| < 2^-14): the 24-bit significand shifted right by
// 126 - exponent bits (14 to 24; clamped to 31, which gives 0 below 2^-25), rounded the same way. At or above
// 65520 (the tie with 2^16): infinity; NaN keeps its top 10 payload bits with the quiet bit set.
inline std::uint16_t half_of(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const std::uint32_t normal = (a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
  const std::uint32_t shift = std::min(126u - std::min(a >> 23, 112u), 31u);
  const std::uint32_t significand = (a & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t subnormal = (significand + (1u << (shift - 1)) - 1u + ((significand >> shift) & 1u)) >> shift;
  std::uint32_t h = select(mask_if(a < (113u << 23)), subnormal, normal);
  h = select(mask_if(a >= 0x477FF000u), 0x7C00u, h);
  h = select(mask_if(a > 0x7F800000u), 0x7E00u | ((a >> 13) & 0x3FFu), h);
  return static_cast<std::uint16_t>(sign | h);
}

inline float float_of_bfloat16(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// float16 -> float32: exponent and mantissa shifted into place and rebiased; Inf/NaN get the full exponent
// (NaN made quiet); subnormals (exponent 0) renormalised by an exact float subtraction of 2^-14 (normal
// operands and result, so DAZ/FTZ do not touch it).
inline float float_of_half(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t shifted = static_cast<std::uint32_t>(h & 0x7FFFu) << 13;
  const std::uint32_t exp = shifted & (0x1Fu << 23);
  const std::uint32_t normal = shifted + (112u << 23);
  const std::uint32_t special = (normal + (112u << 23)) | select(mask_if((h & 0x7FFFu) > 0x7C00u), 0x400000u, 0u);
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(normal + (1u << 23)) - std::bit_cast<float>(113u << 23));
  const std::uint32_t v = select(mask_if(exp == (0x1Fu << 23)), special, select(mask_if(exp == 0), subnormal, normal));
  return std::bit_cast<float>(sign | v);
}

// One element of half.h's add2: the sum in float32, divided unless the divisor is 1, rounded (the tails of
// the vector builds and the generic build). Reads both inputs before writing, so out may be a or b.
template <typename Narrow, typename Widen>
inline void add2_one(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                     std::size_t i, float divisor, Narrow narrow, Widen widen) {
  float v = widen(a[i]) + widen(b[i]);
  if (divisor != 1.0f) v = v / divisor;
  const std::uint16_t r = narrow(v);
  out[i] = r;
  if (out2 != nullptr) out2[i] = r;
}

}  // namespace
}  // namespace mirror::coll::detail
