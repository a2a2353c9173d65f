// gelu_cpu.h (private) — GELU's element loops (tanh approximation, fast_math.h's tanh), built twice like
// BatchNorm2d's (cpu_loops_isa.h): the baseline build and, on x86-64 with GCC, an AVX2 one, picked by
// gelu_cpu_forward/backward. No fused multiply-add in either (the AVX2 target does not enable FMA), so both give
// the same bits.
#pragma once

#include <cstdint>

namespace mirror::nn::detail {

// y = 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
void gelu_cpu_forward(const float* x, float* y, std::int64_t n);
// dx = dy · GELU'(x).
void gelu_cpu_backward(const float* x, const float* dy, float* dx, std::int64_t n);

void gelu_forward_baseline(const float* x, float* y, std::int64_t n);
void gelu_backward_baseline(const float* x, const float* dy, float* dx, std::int64_t n);
void gelu_forward_avx2(const float* x, float* y, std::int64_t n);
void gelu_backward_avx2(const float* x, const float* dy, float* dx, std::int64_t n);

}  // namespace mirror::nn::detail
