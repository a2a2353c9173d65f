// half_generic.cc — the portable build of the 16-bit buffer conversions and the 2-input sum: half_rules.h's branch-free forms in
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

// add2's loop with its two choices made once, outside it. out may be a or b index for index: no __restrict,
// and no dependence between iterations, which the pragma tells the vectoriser.
template <bool kDivide, bool kTwoOutputs, typename Narrow, typename Widen>
void add2_loop(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2, std::size_t n,
               float divisor, Narrow narrow, Widen widen) {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#elif defined(__GNUC__)
#pragma GCC ivdep
#endif
  for (std::size_t i = 0; i < n; ++i) {
    float v = widen(a[i]) + widen(b[i]);
    if constexpr (kDivide) v = v / divisor;
    const std::uint16_t r = narrow(v);
    out[i] = r;
    if constexpr (kTwoOutputs) out2[i] = r;
  }
}
template <typename Narrow, typename Widen>
void add2_any(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2, std::size_t n,
              float divisor, Narrow narrow, Widen widen) {
  const bool divide = divisor != 1.0f;
  if (divide && out2 != nullptr) return add2_loop<true, true>(a, b, out, out2, n, divisor, narrow, widen);
  if (divide) return add2_loop<true, false>(a, b, out, out2, n, divisor, narrow, widen);
  if (out2 != nullptr) return add2_loop<false, true>(a, b, out, out2, n, divisor, narrow, widen);
  add2_loop<false, false>(a, b, out, out2, n, divisor, narrow, widen);
}
void add2_half(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2, std::size_t n,
               float divisor) noexcept {
  add2_any(a, b, out, out2, n, divisor, half_of, float_of_half);
}
void add2_bfloat16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                   std::size_t n, float divisor) noexcept {
  add2_any(a, b, out, out2, n, divisor, bfloat16_of, float_of_bfloat16);
}

}  // namespace

const HalfKernels kHalfGeneric{"generic",      narrow_half,     narrow_bfloat16,    widen_half,
                               widen_bfloat16, accumulate_half, accumulate_bfloat16, add2_half,
                               add2_bfloat16};

}  // namespace mirror::coll::detail
