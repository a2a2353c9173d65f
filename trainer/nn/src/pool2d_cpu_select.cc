// pool2d_cpu_select.cc — make_pool2d_cpu (pool2d_kernels.h): the NCHW or the blocked loops for the problem's
// layout, in their AVX2 build when BatchNorm2d's CPU loops use theirs (batch_norm2d_cpu_select.cc: the CPU has
// AVX2 and oneDNN runs at AVX2 or better; ONEDNN_MAX_CPU_ISA=SSE41 selects the baseline builds, which is how
// tests/nn's test_nn_pool_layers_sse41 tests them on an AVX2 machine). The same values either way.
#include "batch_norm2d_kernels.h"
#include "pool2d_kernels.h"

namespace mirror::nn::detail {

bool pool2d_cpu_uses_avx2() { return batch_norm_cpu_uses_avx2(); }

std::unique_ptr<Pool2dKernels> make_pool2d_cpu(const Pool2dProblem& problem) {
  const bool blocked = problem.layout != Layout::kNchw;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (pool2d_cpu_uses_avx2())
    return blocked ? make_pool2d_cpu_blocked_avx2(problem) : make_pool2d_cpu_nchw_avx2(problem);
#endif
  return blocked ? make_pool2d_cpu_blocked_baseline(problem) : make_pool2d_cpu_nchw_baseline(problem);
}

}  // namespace mirror::nn::detail
