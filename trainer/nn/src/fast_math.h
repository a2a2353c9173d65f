// fast_math.h (private) — the exponential and tanh of Mirror's own CPU loops (attention's softmax, GELU) as
// branch-free float arithmetic that a loop of them vectorises, where libm's calls do not (tanhf and expm1f
// are out-of-line calls with branches per element).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace mirror::nn::detail {

// e^x for x <= 0 (scores minus their row maximum), relative error below 2e-7: 2^n · p(r) with n = round(x·log2 e)
// and a degree-6 Taylor polynomial of e^r on |r| <= ln2/2; below -87 it gives e^-87 (about 1.6e-38).
inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest by the 1.5·2^23 trick
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

// tanh(x) = sign(x) · (1 − e) / (1 + e) with e = e^(−2|x|): absolute error below 3e-7 (relative error grows as
// |x| → 0, where 1 − e cancels; GELU adds it to 1, so only the absolute error matters there).
inline float tanh_bounded_error(float x) {
  const float e = exp_nonpositive(-2.0f * std::fabs(x));
  return std::copysign((1.0f - e) / (1.0f + e), x);
}

}  // namespace mirror::nn::detail
