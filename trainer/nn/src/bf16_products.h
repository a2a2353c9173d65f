// bf16_products.h (private) — bfloat16 products on either device, for the layers' bfloat16 compute (precision.h):
// C[m, n] = alpha · op(A) · op(B) + beta · C with bfloat16 A and B, float32 accumulation and a float32 C, row-major
// as ops::gemm (CPU: oneDNN, bf16_gemm_cpu.h; CUDA: cuBLAS cublasGemmEx on tensor cores, cuda/bf16_gemm_cuda.cc);
// and BFloat16Copy, the bfloat16 operand a layer keeps of float32 values (CPU: round_to_bfloat16; CUDA:
// half_cast.h's kernel; both round to nearest even).
#pragma once

#include <cstdint>

#include "mirror/nn/device.h"
#include "mirror/nn/ops.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn::detail {

void gemm_bf16(const Device& device, ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta,
               float* c, std::int64_t ldc);

#if MIRROR_HAVE_CUDA
namespace cuda {
void gemm_bf16(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta, float* c,
               std::int64_t ldc);
}  // namespace cuda
#endif

// Float32 values rounded to bfloat16, in a buffer of `device` that only grows.
class BFloat16Copy {
 public:
  explicit BFloat16Copy(Device device = Device{}) : device_(device), values_({0}, device, DType::kBFloat16) {}
  const BFloat16* round(const float* values, std::int64_t n);
  const BFloat16* data() const { return values_.as<BFloat16>(); }

 private:
  Device device_;
  Tensor values_;
};

}  // namespace mirror::nn::detail
