// linear_bf16.cc — linear_bf16.h over bf16_products.h (oneDNN picks AMX, AVX-512-BF16 or AVX-512 kernels for them;
// cuBLAS tensor cores).
#include "linear_bf16.h"

namespace mirror::nn::detail {

using ops::Trans;

void LinearBf16::forward(std::int64_t m, std::int64_t n, std::int64_t k, const float* x, const float* w, float* y) {
  const BFloat16* x16 = x_.round(x, m * k);
  const BFloat16* w16 = w_.round(w, n * k);
  gemm_bf16(device_, Trans::kNo, Trans::kYes, m, n, k, 1.0f, x16, k, w16, k, 0.0f, y, n);
}

void LinearBf16::backward(std::int64_t m, std::int64_t n, std::int64_t k, const float* dy, float beta, float* dw,
                          float* dx) {
  const BFloat16* dy16 = dy_.round(dy, m * n);
  gemm_bf16(device_, Trans::kYes, Trans::kNo, n, k, m, 1.0f, dy16, n, x_.data(), k, beta, dw, k);
  if (dx != nullptr) gemm_bf16(device_, Trans::kNo, Trans::kNo, m, k, n, 1.0f, dy16, n, w_.data(), k, 0.0f, dx, k);
}

}  // namespace mirror::nn::detail
