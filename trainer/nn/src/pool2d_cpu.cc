// pool2d_cpu.cc — Pool2d's CPU kernels (pool2d_kernels.h): max and average pooling as plain loops over NCHW
// planes. Training max pooling keeps each output's winner (its index in the input plane) for backward.
// Why not oneDNN here: oneDNN 2.6 has no JIT pooling for plain NCHW on AVX2 and runs its reference kernel,
// slow enough to take half of a keras-cnn training step; these loops make pooling a small share of it. Blocked inputs (nChw8c / nChw16c) go to pool2d_cpu_max2x2.cc's
// one-pass 2×2 max pooling or else to pool2d_cpu_blocked.cc's loops (each in its AVX2 build where the CPU and
// oneDNN run AVX2), which compute the same values lane by lane.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_loops_isa.h"
#include "pool2d_kernels.h"

namespace mirror::nn::detail {
namespace {

class LoopPool2d final : public Pool2dKernels {
 public:
  explicit LoopPool2d(const Pool2dProblem& p)
      : w_(p.window), mode_(p.mode), training_(p.training), planes_(p.x_shape[0] * p.x_shape[1]),
        in_h_(p.x_shape[2]), in_w_(p.x_shape[3]), out_h_(p.y_shape[2]), out_w_(p.y_shape[3]) {
    if (training_ && mode_ == PoolMode::kMax) winner_.resize(static_cast<std::size_t>(planes_ * out_h_ * out_w_));
  }

  void forward(const float* x, float* y) override {
    for (std::int64_t p = 0; p < planes_; ++p) {
      const float* xp = x + p * in_h_ * in_w_;
      float* yp = y + p * out_h_ * out_w_;
      std::int32_t* win = winner_.empty() ? nullptr : winner_.data() + p * out_h_ * out_w_;
      if (mode_ == PoolMode::kMax)
        max_plane(xp, yp, win);
      else
        average_plane(xp, yp);
    }
  }

  void backward(const float*, const float*, const float* dy, float* dx) override {
    if (mode_ == PoolMode::kMax && is_2x2_stride_2()) return max_backward_2x2(dy, dx);
    std::fill(dx, dx + planes_ * in_h_ * in_w_, 0.0f);
    const float inv = 1.0f / static_cast<float>(w_.kernel_h * w_.kernel_w);
    for (std::int64_t p = 0; p < planes_; ++p) {
      const float* dyp = dy + p * out_h_ * out_w_;
      float* dxp = dx + p * in_h_ * in_w_;
      if (mode_ == PoolMode::kMax) {
        const std::int32_t* win = winner_.data() + p * out_h_ * out_w_;
        for (std::int64_t o = 0; o < out_h_ * out_w_; ++o) dxp[win[o]] += dyp[o];
        continue;
      }
      for (std::int64_t oh = 0; oh < out_h_; ++oh)
        for (std::int64_t ow = 0; ow < out_w_; ++ow) {
          const ClippedWindow c = clip(oh, ow);
          const float g = dyp[oh * out_w_ + ow] * inv;
          for (std::int64_t h = c.h0; h < c.h1; ++h)
            for (std::int64_t w = c.w0; w < c.w1; ++w) dxp[h * in_w_ + w] += g;
        }
    }
  }

 private:
  ClippedWindow clip(std::int64_t oh, std::int64_t ow) const { return clip_window(w_, oh, ow, in_h_, in_w_); }

  // Padding never wins: only positions inside the plane compete (every window has one, as pad <= kernel / 2).
  // Ties go to the first position in row-major order.
  bool is_2x2_stride_2() const { return detail::is_2x2_stride_2(w_); }

  // 2×2 windows, stride 2: they do not overlap, so each window's four dx are written once (winner dy, the
  // rest 0) and only the row and column no window reaches (odd sizes) are cleared: no pass to zero dx first.
  void max_backward_2x2(const float* dy, float* dx) const {
    for (std::int64_t p = 0; p < planes_; ++p) {
      const float* dyp = dy + p * out_h_ * out_w_;
      const std::int32_t* win = winner_.data() + p * out_h_ * out_w_;
      float* dxp = dx + p * in_h_ * in_w_;
      for (std::int64_t oh = 0; oh < out_h_; ++oh) {
        float* r0 = dxp + 2 * oh * in_w_;
        float* r1 = r0 + in_w_;
        for (std::int64_t ow = 0; ow < out_w_; ++ow) {
          const std::int64_t o = oh * out_w_ + ow, at = win[o];
          r0[2 * ow] = r0[2 * ow + 1] = r1[2 * ow] = r1[2 * ow + 1] = 0.0f;
          dxp[at] = dyp[o];
        }
        for (std::int64_t w = 2 * out_w_; w < in_w_; ++w) r0[w] = r1[w] = 0.0f;
      }
      std::fill(dxp + 2 * out_h_ * in_w_, dxp + in_h_ * in_w_, 0.0f);
    }
  }

  void max_plane(const float* x, float* y, std::int32_t* win) const {
    if (is_2x2_stride_2()) return max_plane_2x2(x, y, win);
    for (std::int64_t oh = 0; oh < out_h_; ++oh)
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const ClippedWindow c = clip(oh, ow);
        std::int64_t best = c.h0 * in_w_ + c.w0;
        for (std::int64_t h = c.h0; h < c.h1; ++h)
          for (std::int64_t w = c.w0; w < c.w1; ++w)
            if (x[h * in_w_ + w] > x[best]) best = h * in_w_ + w;
        y[oh * out_w_ + ow] = x[best];
        if (win) win[oh * out_w_ + ow] = static_cast<std::int32_t>(best);
      }
  }

  // The common 2×2 window, stride 2, no padding: the same winners, branch-free (so it vectorises, which the
  // general loop does not).
  void max_plane_2x2(const float* x, float* y, std::int32_t* win) const {
    for (std::int64_t oh = 0; oh < out_h_; ++oh) {
      const std::int64_t base = 2 * oh * in_w_;
      const float* r0 = x + base;
      const float* r1 = r0 + in_w_;
      float* __restrict yr = y + oh * out_w_;
      std::int32_t* __restrict wr = win ? win + oh * out_w_ : nullptr;
      if (!wr) {
#pragma omp simd
        for (std::int64_t ow = 0; ow < out_w_; ++ow)
          yr[ow] = std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), std::max(r1[2 * ow], r1[2 * ow + 1]));
        continue;
      }
      const auto w32 = static_cast<std::int32_t>(in_w_), base32 = static_cast<std::int32_t>(base);
#pragma omp simd
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
        const auto o = static_cast<std::int32_t>(2 * ow);
        float best = a;
        std::int32_t at = o;
        at = b > best ? o + 1 : at;
        best = b > best ? b : best;
        at = c > best ? w32 + o : at;
        best = c > best ? c : best;
        at = d > best ? w32 + o + 1 : at;
        best = d > best ? d : best;
        yr[ow] = best;
        wr[ow] = base32 + at;
      }
    }
  }

  void average_plane(const float* x, float* y) const {
    const float inv = 1.0f / static_cast<float>(w_.kernel_h * w_.kernel_w);
    for (std::int64_t oh = 0; oh < out_h_; ++oh)
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const ClippedWindow c = clip(oh, ow);
        float sum = 0.0f;
        for (std::int64_t h = c.h0; h < c.h1; ++h)
          for (std::int64_t w = c.w0; w < c.w1; ++w) sum += x[h * in_w_ + w];
        y[oh * out_w_ + ow] = sum * inv;
      }
  }

  Pool2dWindow w_;
  PoolMode mode_;
  bool training_;
  std::int64_t planes_, in_h_, in_w_, out_h_, out_w_;
  std::vector<std::int32_t> winner_;  // training max pooling: per output, its winner's index in the plane
};

}  // namespace

std::unique_ptr<Pool2dKernels> make_pool2d_cpu(const Pool2dProblem& problem) {
  if (problem.layout != Layout::kNchw) {
    const bool max_2x2 = problem.mode == PoolMode::kMax && is_2x2_stride_2(problem.window);
#if MIRROR_AVX2_LOOP_BUILDS
    if (cpu_loops_use_avx2())
      return max_2x2 ? make_pool2d_cpu_max2x2_avx2(problem) : make_pool2d_cpu_blocked_avx2(problem);
#endif
    return max_2x2 ? make_pool2d_cpu_max2x2_baseline(problem) : make_pool2d_cpu_blocked_baseline(problem);
  }
  return std::make_unique<LoopPool2d>(problem);
}

}  // namespace mirror::nn::detail
