// batch_norm2d_cpu_select.cc — make_batch_norm_cpu (batch_norm2d_kernels.h): the AVX2 build of the loops where
// cpu_loops_use_avx2 says so (tests/nn's test_nn_batch_norm_sse41 runs the baseline ones on an AVX2 machine), else
// the baseline ones. Same results either way up to the order of NCHW plane sums.
#include "batch_norm2d_kernels.h"
#include "cpu_loops_isa.h"

namespace mirror::nn::detail {

std::unique_ptr<BatchNormKernels> make_batch_norm_cpu() {
#if MIRROR_AVX2_LOOP_BUILDS
  if (cpu_loops_use_avx2()) return make_batch_norm_cpu_avx2();
#endif
  return make_batch_norm_cpu_baseline();
}

}  // namespace mirror::nn::detail
