// half_generic.cc — the portable build of the 16-bit buffer conversions: half_rules.h's branch-free forms in
// plain loops (the compiler vectorises what the baseline ISA allows). Used where no vector build runs.
#include "half_kernels.h"
#include "half_rules.h"

namespace mirror::coll::detail {
namespace {

// Scale 1 skips the multiply, so the unscaled conversions are the reference's bits whatever DAZ/FTZ say.
void narrow_half(const float* __restrict in, std::uint16_t* __restrict out, std::size_t n, float scale) noexcept {
  if (scale == 1.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = half_of(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = half_of(in[i] * scale);
}
void narrow_bfloat16(const float* __restrict in, std::uint16_t* __restrict out, std::size_t n, float scale) noexcept {
  if (scale == 1.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = bfloat16_of(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = bfloat16_of(in[i] * scale);
}
void widen_half(const std::uint16_t* __restrict in, float* __restrict out, std::size_t n, float scale) noexcept {
  if (scale == 1.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_of_half(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = float_of_half(in[i]) * scale;
}
void widen_bfloat16(const std::uint16_t* __restrict in, float* __restrict out, std::size_t n, float scale) noexcept {
  if (scale == 1.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_of_bfloat16(in[i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = float_of_bfloat16(in[i]) * scale;
}
void accumulate_half(const std::uint16_t* __restrict in, float* __restrict acc, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) acc[i] += float_of_half(in[i]);
}
void accumulate_bfloat16(const std::uint16_t* __restrict in, float* __restrict acc, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) acc[i] += float_of_bfloat16(in[i]);
}

void add2_half(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2, std::size_t n,
               float divisor) noexcept {
  for (std::size_t i = 0; i < n; ++i) add2_one(a, b, out, out2, i, divisor, half_of, float_of_half);
}
void add2_bfloat16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                   std::size_t n, float divisor) noexcept {
  for (std::size_t i = 0; i < n; ++i) add2_one(a, b, out, out2, i, divisor, bfloat16_of, float_of_bfloat16);
}

}  // namespace

const HalfKernels kHalfGeneric{"generic",      narrow_half,     narrow_bfloat16,    widen_half,
                               widen_bfloat16, accumulate_half, accumulate_bfloat16, add2_half,
                               add2_bfloat16};

}  // namespace mirror::coll::detail
