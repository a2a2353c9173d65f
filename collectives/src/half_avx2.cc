// half_avx2.cc — the AVX2 + F16C build of the 16-bit buffer conversions and the 2-input sum (add2) (this file alone is compiled with
// -mavx2 -mf16c; half.cc picks it only when the CPU reports both). float16: vcvtps2ph with the rounding
// fixed to nearest even in the instruction (not MXCSR's; it ignores FTZ, and float32 subnormal inputs give
// ±0 either way) and vcvtph2ps (exact, NaN made quiet), which is half.cc's rule. bfloat16: the integer
// rounding of half_rules.h, 8 lanes at a time, packed to 16 bits.
#include <immintrin.h>

#include "half_kernels.h"
#include "half_rules.h"

namespace mirror::coll::detail {
namespace {

constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// x * s, or x itself at scale 1 (so the unscaled conversions are the reference's bits whatever DAZ/FTZ say;
// the branch is the same for every vector of a call).
inline __m256 scaled(__m256 x, __m256 s, float scale) { return scale == 1.0f ? x : _mm256_mul_ps(x, s); }

void narrow_half(const float* in, std::uint16_t* out, std::size_t n, float scale) noexcept {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(scaled(_mm256_loadu_ps(in + i), s, scale), kNearest);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = half_of(scale == 1.0f ? in[i] : in[i] * scale);
}

void widen_half(const std::uint16_t* in, float* out, std::size_t n, float scale) noexcept {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, scaled(f, s, scale));
  }
  for (; i < n; ++i) out[i] = (scale == 1.0f ? float_of_half(in[i]) : float_of_half(in[i]) * scale);
}

// 8 floats -> 8 bfloat16 in the low halves of the 32-bit lanes.
inline __m256i round_to_bfloat16(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i top = _mm256_srli_epi32(u, 16);
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                            _mm256_set1_epi32(0x7F800000));
  const __m256i bias = _mm256_add_epi32(_mm256_and_si256(top, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7FFF));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  const __m256i quiet = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

void narrow_bfloat16(const float* in, std::uint16_t* out, std::size_t n, float scale) noexcept {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = round_to_bfloat16(scaled(_mm256_loadu_ps(in + i), s, scale));
    const __m256i hi = round_to_bfloat16(scaled(_mm256_loadu_ps(in + i + 8), s, scale));
    // packus works per 128-bit lane (lo0-3 hi0-3 lo4-7 hi4-7); the permute puts the quarters in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  for (; i < n; ++i) out[i] = bfloat16_of(scale == 1.0f ? in[i] : in[i] * scale);
}

inline __m256 load_bfloat16(const std::uint16_t* p) {
  const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

void widen_bfloat16(const std::uint16_t* in, float* out, std::size_t n, float scale) noexcept {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, scaled(load_bfloat16(in + i), s, scale));
  for (; i < n; ++i) out[i] = (scale == 1.0f ? float_of_bfloat16(in[i]) : float_of_bfloat16(in[i]) * scale);
}

void accumulate_half(const std::uint16_t* in, float* acc, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), f));
  }
  for (; i < n; ++i) acc[i] += float_of_half(in[i]);
}

void accumulate_bfloat16(const std::uint16_t* in, float* acc, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), load_bfloat16(in + i)));
  for (; i < n; ++i) acc[i] += float_of_bfloat16(in[i]);
}

// a + b, divided unless the divisor is 1 (the same branch for every vector of a call).
inline __m256 sum_of(__m256 a, __m256 b, __m256 d, bool divide) {
  const __m256 v = _mm256_add_ps(a, b);
  return divide ? _mm256_div_ps(v, d) : v;
}

// Both inputs of a vector are loaded before its output is stored, so out may be a or b index for index.
void add2_half(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2, std::size_t n,
               float divisor) noexcept {
  const bool divide = divisor != 1.0f;
  const __m256 d = _mm256_set1_ps(divisor);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 fa = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 fb = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m128i h = _mm256_cvtps_ph(sum_of(fa, fb, d, divide), kNearest);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    if (out2 != nullptr) _mm_storeu_si128(reinterpret_cast<__m128i*>(out2 + i), h);
  }
  for (; i < n; ++i) add2_one(a, b, out, out2, i, divisor, half_of, float_of_half);
}

void add2_bfloat16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                   std::size_t n, float divisor) noexcept {
  const bool divide = divisor != 1.0f;
  const __m256 d = _mm256_set1_ps(divisor);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = round_to_bfloat16(sum_of(load_bfloat16(a + i), load_bfloat16(b + i), d, divide));
    const __m256i hi = round_to_bfloat16(sum_of(load_bfloat16(a + i + 8), load_bfloat16(b + i + 8), d, divide));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
    if (out2 != nullptr) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out2 + i), packed);
  }
  for (; i < n; ++i) add2_one(a, b, out, out2, i, divisor, bfloat16_of, float_of_bfloat16);
}

}  // namespace

const HalfKernels kHalfAvx2{"avx2",         narrow_half,     narrow_bfloat16,    widen_half,
                            widen_bfloat16, accumulate_half, accumulate_bfloat16, add2_half,
                            add2_bfloat16};

}  // namespace mirror::coll::detail
