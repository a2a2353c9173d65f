// bf16_gemm_cuda.cc — cuda::gemm_bf16 (bf16_products.h): cublasGemmEx with bfloat16 A and B, a float32 C and
// float32 accumulation (CUBLAS_COMPUTE_32F, tensor cores where the GPU has them), row-major expressed column-major
// with the operands swapped, as ops_cuda.cu's sgemm; on the legacy default stream.
#include "../bf16_products.h"
#include "cuda_check.h"

namespace mirror::nn::detail::cuda {
namespace {

cublasOperation_t op(ops::Trans t) { return t == ops::Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void gemm_bf16(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta, float* c,
               std::int64_t ldc) {
  MIRROR_CHECK_CUBLAS(cublasGemmEx(cublas_handle(), op(tb), op(ta), static_cast<int>(n), static_cast<int>(m),
                                   static_cast<int>(k), &alpha, b, CUDA_R_16BF, static_cast<int>(ldb), a, CUDA_R_16BF,
                                   static_cast<int>(lda), &beta, c, CUDA_R_32F, static_cast<int>(ldc),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace mirror::nn::detail::cuda
