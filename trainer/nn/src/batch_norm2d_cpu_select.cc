// batch_norm2d_cpu_select.cc — make_batch_norm_cpu (batch_norm2d_kernels.h): the AVX2 build of the loops when
// the CPU has AVX2 and oneDNN runs at AVX2 or better (cpu_isa_name: ONEDNN_MAX_CPU_ISA lowers both at once, which
// is how the baseline loops are tested on an AVX2 machine: tests/nn's test_nn_batch_norm_sse41), else the
// baseline ones. Same results either way up to the order of NCHW plane sums.
#include <string>

#include "batch_norm2d_kernels.h"
#include "mirror/nn/cpu_kernels.h"

namespace mirror::nn::detail {

bool batch_norm_cpu_uses_avx2() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const bool avx2 = [] {
    const std::string isa = cpu_isa_name();
    return __builtin_cpu_supports("avx2") && (isa.rfind("avx2", 0) == 0 || isa.rfind("avx512", 0) == 0);
  }();
  return avx2;
#else
  return false;
#endif
}

std::unique_ptr<BatchNormKernels> make_batch_norm_cpu() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (batch_norm_cpu_uses_avx2()) return make_batch_norm_cpu_avx2();
#endif
  return make_batch_norm_cpu_baseline();
}

}  // namespace mirror::nn::detail
