// batch_norm2d_cpu.cc — BatchNorm2d's CPU loops (batch_norm2d_kernels.h), vectorised by the compiler (omp simd
// over each H×W plane; plane sums in double lanes). For NCHW data oneDNN 2.6 has only its non-JIT
// ncsp_bnorm, which mirror-layer-bench measured about 3x slower than these loops (docs/compute.md).
#include "batch_norm2d_kernels.h"

namespace mirror::nn::detail {
namespace {

// out[c] = Σ over samples and the plane of f(value, c).
template <typename F>
void channel_sums(const BnBatch& b, const float* x, F f, std::vector<double>& out) {
  out.assign(b.channels, 0.0);
  for (std::int64_t n = 0; n < b.n; ++n)
    for (std::int64_t c = 0; c < b.channels; ++c) {
      const float* __restrict plane = x + (n * b.channels + c) * b.area;
      double p = 0.0;
#pragma omp simd reduction(+ : p)
      for (std::int64_t i = 0; i < b.area; ++i) p += f(plane[i], c);
      out[c] += p;
    }
}

class CpuBatchNorm final : public BatchNormKernels {
 public:
  void sums(const BnBatch& b, const float* x, std::vector<double>& out) override {
    channel_sums(b, x, [](float v, std::int64_t) { return static_cast<double>(v); }, out);
  }

  void squared_deviations(const BnBatch& b, const float* x, const std::vector<double>& mean,
                          std::vector<double>& out) override {
    channel_sums(b, x,
                 [&mean](float v, std::int64_t c) {
                   const double d = v - mean[c];
                   return d * d;
                 },
                 out);
  }

  void gradient_sums(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                     const std::vector<float>& inv_std, std::vector<double>& sdy, std::vector<double>& sdyx) override {
    channel_sums(b, dy, [](float g, std::int64_t) { return static_cast<double>(g); }, sdy);
    sdyx.assign(b.channels, 0.0);
    for (std::int64_t n = 0; n < b.n; ++n)
      for (std::int64_t c = 0; c < b.channels; ++c) {
        const std::int64_t off = (n * b.channels + c) * b.area;
        const float* __restrict g = dy + off;
        const float* __restrict in = x + off;
        const double m = static_cast<double>(mean.hi[c]) + mean.lo[c];
        double p = 0.0;
#pragma omp simd reduction(+ : p)
        for (std::int64_t i = 0; i < b.area; ++i) p += static_cast<double>(g[i]) * (in[i] - m);
        sdyx[c] += p * inv_std[c];
      }
  }

  void normalise(const BnBatch& b, const float* x, const BnChannelMean& mean, const std::vector<float>& scale,
                 const std::vector<float>& shift, float* y) override {
    for (std::int64_t n = 0; n < b.n; ++n)
      for (std::int64_t c = 0; c < b.channels; ++c) {
        const std::int64_t off = (n * b.channels + c) * b.area;
        const float* __restrict in = x + off;
        float* __restrict out = y + off;
        const float s = scale[c], t = shift[c], hi = mean.hi[c], lo = mean.lo[c];
#pragma omp simd
        for (std::int64_t i = 0; i < b.area; ++i) out[i] = ((in[i] - hi) - lo) * s + t;
      }
  }

  void input_gradient(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                      const std::vector<float>& inv_std, const std::vector<float>& scale,
                      const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, float* dx) override {
    for (std::int64_t n = 0; n < b.n; ++n)
      for (std::int64_t c = 0; c < b.channels; ++c) {
        const std::int64_t off = (n * b.channels + c) * b.area;
        const float* __restrict g = dy + off;
        const float* __restrict in = x + off;
        float* __restrict out = dx + off;
        const float hi = mean.hi[c], lo = mean.lo[c], is = inv_std[c], s = scale[c], md = mean_dy[c],
                    mdx = mean_dyx[c];
#pragma omp simd
        for (std::int64_t i = 0; i < b.area; ++i) {
          const float xhat = ((in[i] - hi) - lo) * is;
          out[i] = s * (g[i] - md - xhat * mdx);
        }
      }
  }
};

}  // namespace

std::unique_ptr<BatchNormKernels> make_batch_norm_cpu() { return std::make_unique<CpuBatchNorm>(); }

}  // namespace mirror::nn::detail
