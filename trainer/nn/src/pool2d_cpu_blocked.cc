// pool2d_cpu_blocked.cc — Pool2d's CPU kernels (pool2d_kernels.h) over oneDNN's channel-blocked layouts nChw8c /
// nChw16c (tensor.h: the b channels of a block are the b contiguous lanes of each pixel) for every window but the
// common 2×2 stride-2 max pooling (pool2d_cpu_max2x2.cc's, in one pass): max pooling with any window and average
// pooling. Every loop of pool2d_cpu.cc's NCHW kernels runs here with the b lanes innermost (omp simd over whole
// vectors of b channels for averages; the max window is a plain loop over them). Each output lane does exactly
// what the NCHW loops do for its channel — the same comparisons in the same order (ties to the first position in
// row-major order, padding never wins), the same winner (its index in the H×W plane), the same summation order
// for averages and for dx — so results equal the NCHW path bit for bit (tests/nn: test_nn_pool_layers,
// test_nn_blocked_layouts).
// This file builds the baseline (x86-64: SSE2) loops; pool2d_cpu_blocked_avx2.cc includes it again to build them
// for AVX2 (GCC's target pragma below, after the library headers, so that only this file's own functions, of
// internal linkage, get AVX2 code). The sums keep their order per lane, without FMA: the same bits as the
// baseline build.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "pool2d_kernels.h"

#if defined(MIRROR_POOL_CPU_AVX2)
#pragma GCC target("avx2")
#endif

namespace mirror::nn::detail {
namespace {

template <std::int64_t B>
class BlockedLoopPool2d final : public Pool2dKernels {
 public:
  explicit BlockedLoopPool2d(const Pool2dProblem& p)
      : w_(p.window), mode_(p.mode), blocks_(p.x_shape[0] * p.x_shape[1] / B), in_h_(p.x_shape[2]),
        in_w_(p.x_shape[3]), out_h_(p.y_shape[2]), out_w_(p.y_shape[3]) {
    if (p.training && mode_ == PoolMode::kMax) winner_.resize(static_cast<std::size_t>(blocks_ * out_size()));
  }

  void forward(const float* x, float* y) override {
    for (std::int64_t k = 0; k < blocks_; ++k) {
      const float* xb = x + k * in_size();
      float* yb = y + k * out_size();
      std::int32_t* win = winner_.empty() ? nullptr : winner_.data() + k * out_size();
      if (mode_ != PoolMode::kMax)
        average_block(xb, yb);
      else
        max_block(xb, yb, win);
    }
  }

  void backward(const float*, const float*, const float* dy, float* dx) override {
    std::fill(dx, dx + blocks_ * in_size(), 0.0f);
    for (std::int64_t k = 0; k < blocks_; ++k) {
      if (mode_ == PoolMode::kMax)
        max_backward_block(dy + k * out_size(), winner_.data() + k * out_size(), dx + k * in_size());
      else
        average_backward_block(dy + k * out_size(), dx + k * in_size());
    }
  }

 private:
  std::int64_t in_size() const { return in_h_ * in_w_ * B; }    // floats of one block of the input
  std::int64_t out_size() const { return out_h_ * out_w_ * B; }  // and of the output (and of the winners)

  ClippedWindow clip(std::int64_t oh, std::int64_t ow) const { return clip_window(w_, oh, ow, in_h_, in_w_); }

  // Any window: only positions inside the plane compete (every window has one, as pad <= kernel / 2), scanned in
  // row-major order; a later position wins only when strictly greater. A loop over the lanes (GCC 12 does not
  // vectorise the select of the winner's index here; no built-in model has such a window).
  void max_block(const float* x, float* y, std::int32_t* win) const {
    for (std::int64_t oh = 0; oh < out_h_; ++oh)
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const ClippedWindow c = clip(oh, ow);
        const auto first = static_cast<std::int32_t>(c.h0 * in_w_ + c.w0);
        float best[B];
        std::int32_t at[B];
        for (std::int64_t l = 0; l < B; ++l) {
          best[l] = x[first * B + l];
          at[l] = first;
        }
        for (std::int64_t h = c.h0; h < c.h1; ++h)
          for (std::int64_t w = c.w0; w < c.w1; ++w) {
            const auto i = static_cast<std::int32_t>(h * in_w_ + w);
            const float* v = x + i * B;
            for (std::int64_t l = 0; l < B; ++l) {
              at[l] = v[l] > best[l] ? i : at[l];
              best[l] = v[l] > best[l] ? v[l] : best[l];
            }
          }
        const std::int64_t o = (oh * out_w_ + ow) * B;
        std::copy(best, best + B, y + o);
        if (win) std::copy(at, at + B, win + o);
      }
  }

  // Sum over the clipped window in row-major order, times 1 / (kh·kw): pool2d_cpu.cc's average_plane per lane.
  void average_block(const float* x, float* y) const {
    const float inv = 1.0f / static_cast<float>(w_.kernel_h * w_.kernel_w);
    for (std::int64_t oh = 0; oh < out_h_; ++oh)
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const ClippedWindow c = clip(oh, ow);
        float sum[B] = {};
        for (std::int64_t h = c.h0; h < c.h1; ++h)
          for (std::int64_t w = c.w0; w < c.w1; ++w) {
            const float* __restrict v = x + (h * in_w_ + w) * B;
#pragma omp simd
            for (std::int64_t l = 0; l < B; ++l) sum[l] += v[l];
          }
        float* __restrict yo = y + (oh * out_w_ + ow) * B;
#pragma omp simd
        for (std::int64_t l = 0; l < B; ++l) yo[l] = sum[l] * inv;
      }
  }

  // dx (zeroed) += each output's dy at its winner, outputs in order: per channel the NCHW loop's additions.
  void max_backward_block(const float* dy, const std::int32_t* win, float* dx) const {
    for (std::int64_t o = 0; o < out_h_ * out_w_ * B; o += B)
      for (std::int64_t l = 0; l < B; ++l) dx[win[o + l] * B + l] += dy[o + l];
  }

  // dx (zeroed) += dy / (kh·kw) over each clipped window, windows and positions in the NCHW loop's order.
  void average_backward_block(const float* dy, float* dx) const {
    const float inv = 1.0f / static_cast<float>(w_.kernel_h * w_.kernel_w);
    for (std::int64_t oh = 0; oh < out_h_; ++oh)
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const ClippedWindow c = clip(oh, ow);
        float g[B];
#pragma omp simd
        for (std::int64_t l = 0; l < B; ++l) g[l] = dy[(oh * out_w_ + ow) * B + l] * inv;
        for (std::int64_t h = c.h0; h < c.h1; ++h)
          for (std::int64_t w = c.w0; w < c.w1; ++w) {
            float* __restrict d = dx + (h * in_w_ + w) * B;
#pragma omp simd
            for (std::int64_t l = 0; l < B; ++l) d[l] += g[l];
          }
      }
  }

  Pool2dWindow w_;
  PoolMode mode_;
  std::int64_t blocks_, in_h_, in_w_, out_h_, out_w_;
  std::vector<std::int32_t> winner_;  // training max pooling: per output lane, its winner's index in the H×W plane
};

}  // namespace

#if defined(MIRROR_POOL_CPU_AVX2)
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_blocked_avx2(const Pool2dProblem& problem) {
#else
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_blocked_baseline(const Pool2dProblem& problem) {
#endif
  if (channel_block(problem.layout) == 16) return std::make_unique<BlockedLoopPool2d<16>>(problem);
  return std::make_unique<BlockedLoopPool2d<8>>(problem);
}

}  // namespace mirror::nn::detail
