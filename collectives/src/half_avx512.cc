// half_avx512.cc — the AVX-512F build of the 16-bit buffer conversions and the 2-input sum (add2) (this file alone is compiled with
// -mavx512f; half.cc picks it only when the CPU reports AVX-512F): half_avx2.cc's method at 16 lanes.
// float16 by vcvtps2ph/vcvtph2ps (rounding fixed to nearest even in the instruction); bfloat16 by integer
// rounding, narrowed with vpmovdw. AVX512_BF16's vcvtneps2bf16 is not used: it flushes float32 subnormal
// inputs to zero, which the reference rule (and so the trainer's bit-exact equivalences) does not.
#include <immintrin.h>

#include "half_kernels.h"
#include "half_rules.h"

namespace mirror::coll::detail {
namespace {

constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// x * s, or x itself at scale 1 (so the unscaled conversions are the reference's bits whatever DAZ/FTZ say;
// the branch is the same for every vector of a call).
inline __m512 scaled(__m512 x, __m512 s, float scale) { return scale == 1.0f ? x : _mm512_mul_ps(x, s); }

void narrow_half(const float* in, std::uint16_t* out, std::size_t n, float scale) noexcept {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(scaled(_mm512_loadu_ps(in + i), s, scale), kNearest);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = half_of(scale == 1.0f ? in[i] : in[i] * scale);
}

inline __m512 load_half(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

void widen_half(const std::uint16_t* in, float* out, std::size_t n, float scale) noexcept {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, scaled(load_half(in + i), s, scale));
  for (; i < n; ++i) out[i] = (scale == 1.0f ? float_of_half(in[i]) : float_of_half(in[i]) * scale);
}

// 16 floats -> 16 bfloat16.
inline __m256i round_to_bfloat16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i top = _mm512_srli_epi32(u, 16);
  const __mmask16 is_nan =
      _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  const __m512i bias = _mm512_add_epi32(_mm512_and_si512(top, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7FFF));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  const __m512i quiet = _mm512_or_si512(top, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet));
}

void narrow_bfloat16(const float* in, std::uint16_t* out, std::size_t n, float scale) noexcept {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), round_to_bfloat16(scaled(_mm512_loadu_ps(in + i), s, scale)));
  }
  for (; i < n; ++i) out[i] = bfloat16_of(scale == 1.0f ? in[i] : in[i] * scale);
}

inline __m512 load_bfloat16(const std::uint16_t* p) {
  const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}

void widen_bfloat16(const std::uint16_t* in, float* out, std::size_t n, float scale) noexcept {
  const __m512 s = _mm512_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, scaled(load_bfloat16(in + i), s, scale));
  for (; i < n; ++i) out[i] = (scale == 1.0f ? float_of_bfloat16(in[i]) : float_of_bfloat16(in[i]) * scale);
}

void accumulate_half(const std::uint16_t* in, float* acc, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), load_half(in + i)));
  for (; i < n; ++i) acc[i] += float_of_half(in[i]);
}

void accumulate_bfloat16(const std::uint16_t* in, float* acc, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), load_bfloat16(in + i)));
  }
  for (; i < n; ++i) acc[i] += float_of_bfloat16(in[i]);
}

// a + b, divided unless the divisor is 1 (the same branch for every vector of a call).
inline __m512 sum_of(__m512 a, __m512 b, __m512 d, bool divide) {
  const __m512 v = _mm512_add_ps(a, b);
  return divide ? _mm512_div_ps(v, d) : v;
}

// Both inputs of a vector are loaded before its output is stored, so out may be a or b index for index.
void add2_half(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2, std::size_t n,
               float divisor) noexcept {
  const bool divide = divisor != 1.0f;
  const __m512 d = _mm512_set1_ps(divisor);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(sum_of(load_half(a + i), load_half(b + i), d, divide), kNearest);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
    if (out2 != nullptr) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out2 + i), h);
  }
  for (; i < n; ++i) add2_one(a, b, out, out2, i, divisor, half_of, float_of_half);
}

void add2_bfloat16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                   std::size_t n, float divisor) noexcept {
  const bool divide = divisor != 1.0f;
  const __m512 d = _mm512_set1_ps(divisor);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i r = round_to_bfloat16(sum_of(load_bfloat16(a + i), load_bfloat16(b + i), d, divide));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), r);
    if (out2 != nullptr) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out2 + i), r);
  }
  for (; i < n; ++i) add2_one(a, b, out, out2, i, divisor, bfloat16_of, float_of_bfloat16);
}

}  // namespace

const HalfKernels kHalfAvx512{"avx512",       narrow_half,     narrow_bfloat16,    widen_half,
                              widen_bfloat16, accumulate_half, accumulate_bfloat16, add2_half,
                              add2_bfloat16};

}  // namespace mirror::coll::detail
