// linear_bf16.h (private) — Linear's three products with bfloat16 operands and float32 results (precision.h), on
// the CPU or CUDA (bf16_products.h): y = x·Wᵀ, dW (+)= dyᵀ·x, dx = dy·W. It keeps the bfloat16 x and W of the
// forward for the backward, so each is rounded once per step; dy is rounded once for both backward products.
#pragma once

#include <cstdint>

#include "bf16_products.h"

namespace mirror::nn::detail {

class LinearBf16 {
 public:
  explicit LinearBf16(Device device) : device_(device), x_(device), w_(device), dy_(device) {}
  // y [m, n] = x [m, k] · wᵀ (w [n, k]).
  void forward(std::int64_t m, std::int64_t n, std::int64_t k, const float* x, const float* w, float* y);
  // dw [n, k] = beta · dw + dyᵀ · x, and dx [m, k] = dy · w when dx is not null; x and w those of the forward.
  void backward(std::int64_t m, std::int64_t n, std::int64_t k, const float* dy, float beta, float* dw, float* dx);

 private:
  Device device_;
  BFloat16Copy x_, w_, dy_;
};

}  // namespace mirror::nn::detail
