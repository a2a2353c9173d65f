// half.cc — bit-level float16/bfloat16 <-> float32 conversion with round-to-nearest-even: the per-value
// reference rule (written for clarity, with branches), and the run-time choice of the vector build that the
// whole-buffer conversions use (half_kernels.h).
#include "mirror/coll/half.h"

#include <array>
#include <bit>
#include <cstring>

#include "half_kernels.h"

namespace mirror::coll {

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13) | (mant ? 0x00400000u : 0u);  // inf, or quiet NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal half: value = mant * 2^-24; normalise it for float32.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t float_to_half(float f) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u | ((abs >> 13) & 0x3FFu) : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in half: value / 2^-24 rounded to nearest even integer.
    if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal: zero
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126 - exp;  // 14 + (113 - exp) - 1 ... bits dropped: (125 - exp) + 1
    std::uint32_t result = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (result & 1u))) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  // Normal: rebias and round the 13 dropped bits to nearest even (a carry may bump the exponent).
  std::uint32_t h = ((abs >> 13) - (112u << 10));
  const std::uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float bfloat16_to_float(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t float_to_bfloat16(float f) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

namespace {

// Widest first. The checks include the OS's support for the registers (__builtin_cpu_supports does).
std::array<const HalfKernels*, 3> find_supported(std::size_t* count) {
  std::array<const HalfKernels*, 3> found{};
  std::size_t n = 0;
#ifdef MIRROR_HALF_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) found[n++] = &detail::kHalfAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) found[n++] = &detail::kHalfAvx2;
#endif
  found[n++] = &detail::kHalfGeneric;
  *count = n;
  return found;
}

struct Supported {
  std::size_t count = 0;
  std::array<const HalfKernels*, 3> kernels = find_supported(&count);
};

const Supported& supported() noexcept {
  static const Supported s;
  return s;
}

}  // namespace

std::span<const HalfKernels* const> supported_half_kernels() noexcept {
  return {supported().kernels.data(), supported().count};
}

const HalfKernels& half_kernels() noexcept {
  static const HalfKernels& chosen = *supported().kernels[0];
  return chosen;
}

void half_to_float(const std::uint16_t* in, float* out, std::size_t count) noexcept {
  half_kernels().half_to_float(in, out, count, 1.0f);
}
void float_to_half(const float* in, std::uint16_t* out, std::size_t count) noexcept {
  half_kernels().float_to_half(in, out, count, 1.0f);
}
void bfloat16_to_float(const std::uint16_t* in, float* out, std::size_t count) noexcept {
  half_kernels().bfloat16_to_float(in, out, count, 1.0f);
}
void float_to_bfloat16(const float* in, std::uint16_t* out, std::size_t count) noexcept {
  half_kernels().float_to_bfloat16(in, out, count, 1.0f);
}

void float_to_half_scaled(const float* in, std::uint16_t* out, std::size_t count, float scale) noexcept {
  half_kernels().float_to_half(in, out, count, scale);
}
void float_to_bfloat16_scaled(const float* in, std::uint16_t* out, std::size_t count, float scale) noexcept {
  half_kernels().float_to_bfloat16(in, out, count, scale);
}
void half_to_float_scaled(const std::uint16_t* in, float* out, std::size_t count, float scale) noexcept {
  half_kernels().half_to_float(in, out, count, scale);
}
void bfloat16_to_float_scaled(const std::uint16_t* in, float* out, std::size_t count, float scale) noexcept {
  half_kernels().bfloat16_to_float(in, out, count, scale);
}

void half_accumulate(const std::uint16_t* in, float* acc, std::size_t count) noexcept {
  half_kernels().half_accumulate(in, acc, count);
}
void bfloat16_accumulate(const std::uint16_t* in, float* acc, std::size_t count) noexcept {
  half_kernels().bfloat16_accumulate(in, acc, count);
}

void half_add2(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
               std::size_t count, float divisor) noexcept {
  half_kernels().half_add2(a, b, out, out2, count, divisor);
}
void bfloat16_add2(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                   std::size_t count, float divisor) noexcept {
  half_kernels().bfloat16_add2(a, b, out, out2, count, divisor);
}

}  // namespace mirror::coll
