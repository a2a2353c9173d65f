// bf16_products.cc — bf16_products.h: the dispatch by device.
#include "bf16_products.h"

#include "backend.h"
#include "bf16_gemm_cpu.h"
#include "mirror/nn/half_cast.h"
#include "mirror/nn/precision.h"

namespace mirror::nn::detail {

void gemm_bf16(const Device& device, ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta,
               float* c, std::int64_t ldc) {
#if MIRROR_HAVE_CUDA
  if (device.is_cuda()) return cuda::gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
  require_cpu(device);
  cpu::gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const BFloat16* BFloat16Copy::round(const float* values, std::int64_t n) {
  values_.resize({n});
  if (device_.is_cuda())
    narrow_to_16bit(device_, values, reinterpret_cast<std::uint16_t*>(values_.as<BFloat16>()),
                    static_cast<std::size_t>(n), /*half=*/false, 1.0f);
  else
    round_to_bfloat16(values, values_.as<BFloat16>(), n);
  return values_.as<BFloat16>();
}

}  // namespace mirror::nn::detail
