// cpu_loops_isa.cc — cpu_loops_use_avx2 (cpu_loops_isa.h), decided once per process.
#include "cpu_loops_isa.h"

#include <string>

#include "mirror/nn/cpu_kernels.h"

namespace mirror::nn::detail {

bool cpu_loops_use_avx2() {
#if MIRROR_AVX2_LOOP_BUILDS
  static const bool avx2 = [] {
    const std::string isa = cpu_isa_name();
    return __builtin_cpu_supports("avx2") && (isa.rfind("avx2", 0) == 0 || isa.rfind("avx512", 0) == 0);
  }();
  return avx2;
#else
  return false;
#endif
}

}  // namespace mirror::nn::detail
