// gelu_cpu.cc — gelu_cpu.h's loops; compiled again by gelu_cpu_avx2.cc with MIRROR_GELU_CPU_AVX2 for AVX2, and the
// selection (in the baseline build only).
#include "gelu_cpu.h"

#include "cpu_loops_isa.h"
#include "fast_math.h"

#if defined(MIRROR_GELU_CPU_AVX2)
#pragma GCC target("avx2")
#define MIRROR_GELU_BUILD(name) name##_avx2
#else
#define MIRROR_GELU_BUILD(name) name##_baseline
#endif

namespace mirror::nn::detail {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

}  // namespace

void MIRROR_GELU_BUILD(gelu_forward)(const float* __restrict x, float* __restrict y, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanh_bounded_error(kSqrt2OverPi * (v + kCubic * v * v * v)));
  }
}

void MIRROR_GELU_BUILD(gelu_backward)(const float* __restrict x, const float* __restrict dy, float* __restrict dx,
                                      std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = tanh_bounded_error(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float inner_grad = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * inner_grad);
  }
}

#if !defined(MIRROR_GELU_CPU_AVX2)
void gelu_cpu_forward(const float* x, float* y, std::int64_t n) {
#if MIRROR_AVX2_LOOP_BUILDS
  if (cpu_loops_use_avx2()) return gelu_forward_avx2(x, y, n);
#endif
  gelu_forward_baseline(x, y, n);
}

void gelu_cpu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
#if MIRROR_AVX2_LOOP_BUILDS
  if (cpu_loops_use_avx2()) return gelu_backward_avx2(x, dy, dx, n);
#endif
  gelu_backward_baseline(x, dy, dx, n);
}
#endif

}  // namespace mirror::nn::detail
