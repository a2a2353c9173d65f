// linear_cpu_matmul.h (private) — Linear's forward product on the CPU: y[m, n] = x[m, k] · Wᵀ with W [n, k], all
// row-major, as a oneDNN matmul primitive (dnnl_cpu.h) built once per shape, instead of sgemm. oneDNN 2.6's
// matmul runs its brgemm kernels on AVX-512, where its sgemm is slower at a Linear's forward shape (transposed
// weights, long k); on AVX2 it has no brgemm and sgemm is as fast or faster (docs/benchmarks.md, "Matrix
// products"): so the matmul runs where oneDNN runs AVX-512 (or better), sgemm elsewhere. The backward products
// stay sgemm: there the two are level or sgemm is ahead.
#pragma once

#include <cstdint>
#include <memory>

namespace mirror::nn::detail {

// Whether Linear's CPU forward is the matmul (oneDNN at avx512*), decided once per process; the kernels'
// description (cpu_kernels.h) names it.
bool cpu_linear_forward_uses_matmul();

class CpuLinearForward {
 public:
  CpuLinearForward();
  ~CpuLinearForward();
  CpuLinearForward(const CpuLinearForward&) = delete;
  CpuLinearForward& operator=(const CpuLinearForward&) = delete;
  // y = x · wᵀ (x [m, k], w [n, k], y [m, n]); `layer` names it in errors.
  void run(const char* layer, std::int64_t m, std::int64_t n, std::int64_t k, const float* x, const float* w, float* y);

 private:
  struct Primitive;
  std::unique_ptr<Primitive> primitive_;
};

}  // namespace mirror::nn::detail
