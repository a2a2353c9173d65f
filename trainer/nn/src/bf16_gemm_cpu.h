// bf16_gemm_cpu.h (private) — the CPU's bfloat16 products: C[m, n] = alpha · op(A)[m, k] · op(B)[k, n] + beta · C
// with bfloat16 A and B, float32 accumulation and a float32 C, row-major with leading dimensions as ops::gemm
// (mirror/nn/ops.h). A oneDNN matmul primitive per distinct call (transposes, sizes, leading dimensions, alpha,
// beta), built on first use and kept for the process: a model makes a few dozen (its linear layers' shapes,
// attention's block shapes), and building one costs far more than running a small one. bf16_products.h dispatches
// here for the CPU.
#pragma once

#include <cstdint>

#include "mirror/nn/ops.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn::detail {

namespace cpu {
void gemm_bf16(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta, float* c,
               std::int64_t ldc);
}  // namespace cpu

}  // namespace mirror::nn::detail
