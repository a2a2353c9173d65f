// batch_norm2d_cpu.cc — BatchNorm2d's CPU loops (batch_norm2d_kernels.h), vectorised by the compiler, over NCHW
// (omp simd over each H×W plane) or over oneDNN's channel-blocked layouts nChw8c / nChw16c (tensor.h: the b
// channels of a block are the b lanes of each pixel, so every loop runs over whole vectors of b channels with
// their per-channel constants held in registers). Σx is summed in double lanes; the squared deviations and the
// gradient sums in float partials of a few pixels, each added to a double (see kPartialPixels).
// For NCHW data oneDNN 2.6 has only its non-JIT ncsp_bnorm, slower than these loops (docs/benchmarks.md,
// "BatchNorm2d"); its JIT one computes statistics that cannot be summed over replicas.
// A ReLU fused after the layer (BnBatch::relu) is applied in normalise and masks dy in the backward loops.
// A 2×2 max pooling after the layer may hand back its output gradient and winners instead of a full-size dy
// (bn_hand_over.h): the blocked backward loops then take each value's gradient from its window (PooledRuns),
// in the same order, so the sums are the same bits as over the dy that pooling would have written.
// This file builds the baseline (x86-64: SSE2) loops; batch_norm2d_cpu_avx2.cc includes it again to build the
// same loops for AVX2 (GCC's target pragma below, after the library headers, so that only this file's own
// functions, all of internal linkage, get AVX2 code: no shared inline function may carry it into the baseline).
// AVX2 without FMA: each element's arithmetic is the baseline's; only NCHW plane sums change their order.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "batch_norm2d_kernels.h"

#if defined(MIRROR_BN_CPU_AVX2)
#pragma GCC target("avx2")
#endif

namespace mirror::nn::detail {
namespace {

constexpr std::int64_t kMaxBlock = 16;

// Calls f(n, c0, p, lanes) for every run of the batch: NCHW gives one plane (channel c0, `area` values of stride
// 1, lanes 1); a blocked layout gives one block (channels c0 .. c0 + b − 1, `area` pixels of b lanes each).
template <typename F>
void for_each_run(const BnBatch& b, F f) {
  const std::int64_t per_sample = b.channels / b.block;
  for (std::int64_t n = 0; n < b.n; ++n)
    for (std::int64_t r = 0; r < per_sample; ++r) f((n * per_sample + r) * b.area * b.block, r * b.block);
}

// out[c] = Σ over samples and pixels of f(i, c) (i the element's offset, c its channel), in double; each run's
// sum is multiplied by post[c] (when not null) as it is added.
template <std::int64_t B, typename F>
void blocked_sums(const BnBatch& b, F f, const float* post, std::vector<double>& out) {
  out.assign(b.channels, 0.0);
  for_each_run(b, [&](std::int64_t off, std::int64_t c0) {
    std::array<double, B> acc{};
    for (std::int64_t i = 0; i < b.area; ++i)
#pragma omp simd
      for (std::int64_t l = 0; l < B; ++l) acc[l] += f(off + i * B + l, c0 + l);
    for (std::int64_t l = 0; l < B; ++l) out[c0 + l] += post ? acc[l] * post[c0 + l] : acc[l];
  });
}

template <typename F>
void channel_sums(const BnBatch& b, F f, const float* post, std::vector<double>& out) {
  if (b.block == 8) return blocked_sums<8>(b, f, post, out);
  if (b.block == 16) return blocked_sums<16>(b, f, post, out);
  out.assign(b.channels, 0.0);
  for_each_run(b, [&](std::int64_t off, std::int64_t c) {
    double p = 0.0;
#pragma omp simd reduction(+ : p)
    for (std::int64_t i = 0; i < b.area; ++i) p += f(off + i, c);
    out[c] += post ? p * post[c] : p;
  });
}

// Float partials, for sums of terms that do not cancel to far less than their size (squared deviations; the
// gradient sums, whose error then stays far below dy's own): each lane sums kPartialPixels pixels in float,
// then adds that partial to its double sum: twice the elements per vector of double lanes (AVX2: 8 floats
// against 4 doubles; docs/benchmarks.md, "BatchNorm2d"), within ~16 float roundings of the terms' magnitudes. Σx keeps double lanes (channel_sums): with a large mean its float
// partials would be off by more than a small spread.
constexpr std::int64_t kPartialPixels = 16;

// A second sum left out: channel_float_sums2 then sums f1 only (the branches for f2 compile away).
struct NoSum {};

// What the blocked loops know of a pixel besides its offset, from a cursor that each run (one block of one sample)
// starts and each pixel advances: nothing for the plain loops; for a pooled gradient, where the gradient and the
// winners of the pixel's window lie (PooledCursor below).
struct NoPixel {};
struct PlainRuns {
  auto operator()(std::int64_t) const {
    return [] { return NoPixel{}; };
  }
};
// f(i, c) as the blocked loops call it, f(pixel, i, lane, c); NoSum stays NoSum.
template <typename F>
auto ignoring_pixel(F f) {
  return [f](NoPixel, std::int64_t i, std::int64_t, std::int64_t c) { return f(i, c); };
}
inline NoSum ignoring_pixel(NoSum) { return {}; }

// out1[c] = Σ f1(px, i, l, c) and out2[c] = Σ f2(px, i, l, c) · post2[c], f1 and f2 floats, px the cursor's
// pixel, l the lane of element i.
template <std::int64_t B, typename Runs, typename F1, typename F2>
void blocked_float_sums2(const BnBatch& b, Runs runs, F1 f1, F2 f2, const float* post2, std::vector<double>& out1,
                         std::vector<double>& out2) {
  constexpr bool kTwo = !std::is_same_v<F2, NoSum>;
  for_each_run(b, [&](std::int64_t off, std::int64_t c0) {
    auto next_pixel = runs(off);
    std::array<double, B> a1{}, a2{};
    for (std::int64_t i0 = 0; i0 < b.area; i0 += kPartialPixels) {
      const std::int64_t i1 = std::min(b.area, i0 + kPartialPixels);
      std::array<float, B> p1{}, p2{};
      for (std::int64_t i = i0; i < i1; ++i) {
        const auto px = next_pixel();
#pragma omp simd
        for (std::int64_t l = 0; l < B; ++l) {
          p1[l] += f1(px, off + i * B + l, l, c0 + l);
          if constexpr (kTwo) p2[l] += f2(px, off + i * B + l, l, c0 + l);
        }
      }
      for (std::int64_t l = 0; l < B; ++l) {
        a1[l] += p1[l];
        if constexpr (kTwo) a2[l] += p2[l];
      }
    }
    for (std::int64_t l = 0; l < B; ++l) {
      out1[c0 + l] += a1[l];
      if constexpr (kTwo) out2[c0 + l] += a2[l] * post2[c0 + l];
    }
  });
}

// NCHW: the same partials in the same order as a blocked lane's (kPartialPixels consecutive pixels each, summed
// in order, added to the double in order), so both layouts give the same bits; vectorised across kPlaneChunks
// partials at a time (strided loads) instead of across channels.
constexpr std::int64_t kPlaneChunks = 8;

template <typename F1, typename F2>
void channel_float_sums2(const BnBatch& b, F1 f1, F2 f2, const float* post2, std::vector<double>& out1,
                         std::vector<double>& out2) {
  constexpr bool kTwo = !std::is_same_v<F2, NoSum>;
  out1.assign(b.channels, 0.0);
  if constexpr (kTwo) out2.assign(b.channels, 0.0);
  if (b.block == 8) return blocked_float_sums2<8>(b, PlainRuns{}, ignoring_pixel(f1), ignoring_pixel(f2), post2, out1, out2);
  if (b.block == 16)
    return blocked_float_sums2<16>(b, PlainRuns{}, ignoring_pixel(f1), ignoring_pixel(f2), post2, out1, out2);
  constexpr std::int64_t kGroup = kPartialPixels * kPlaneChunks;
  for_each_run(b, [&](std::int64_t off, std::int64_t c) {
    double a1 = 0.0, a2 = 0.0;
    std::int64_t i0 = 0;
    for (; i0 + kGroup <= b.area; i0 += kGroup) {
      std::array<float, kPlaneChunks> p1{}, p2{};
      for (std::int64_t t = 0; t < kPartialPixels; ++t)
#pragma omp simd
        for (std::int64_t j = 0; j < kPlaneChunks; ++j) {
          p1[j] += f1(off + i0 + j * kPartialPixels + t, c);
          if constexpr (kTwo) p2[j] += f2(off + i0 + j * kPartialPixels + t, c);
        }
      for (std::int64_t j = 0; j < kPlaneChunks; ++j) {
        a1 += p1[j];
        if constexpr (kTwo) a2 += p2[j];
      }
    }
    for (; i0 < b.area; i0 += kPartialPixels) {
      float p1 = 0.0f, p2 = 0.0f;
      for (std::int64_t i = i0; i < std::min(b.area, i0 + kPartialPixels); ++i) {
        p1 += f1(off + i, c);
        if constexpr (kTwo) p2 += f2(off + i, c);
      }
      a1 += p1;
      if constexpr (kTwo) a2 += p2;
    }
    out1[c] += a1;
    if constexpr (kTwo) out2[c] += a2 * post2[c];
  });
}

// out = g(px, i, l, c) element-wise, c the channel of each element, l its lane, px the cursor's pixel.
template <std::int64_t B, typename Runs, typename G>
void blocked_map(const BnBatch& b, Runs runs, G g) {
  for_each_run(b, [&](std::int64_t off, std::int64_t c0) {
    auto next_pixel = runs(off);
    for (std::int64_t i = 0; i < b.area; ++i) {
      const auto px = next_pixel();
#pragma omp simd
      for (std::int64_t l = 0; l < B; ++l) g(px, off + i * B + l, l, c0 + l);
    }
  });
}

template <typename G>
void channel_map(const BnBatch& b, G g) {
  if (b.block == 8) return blocked_map<8>(b, PlainRuns{}, ignoring_pixel(g));
  if (b.block == 16) return blocked_map<16>(b, PlainRuns{}, ignoring_pixel(g));
  for_each_run(b, [&](std::int64_t off, std::int64_t c) {
#pragma omp simd
    for (std::int64_t i = 0; i < b.area; ++i) g(off + i, c);
  });
}

// A pooled gradient's pixels (bn_hand_over.h), for the blocked loops: each pixel's window (its gradient and
// winners, B lanes each) and its position in the window, row-major; a pixel in no window (the last row or column of
// an odd size) points at lanes of +0 that no position wins.
struct PooledPixel {
  const float* dy;
  const float* winners;
  float position;
};
alignas(64) constexpr float kZeroLanes[kMaxBlock] = {};
alignas(64) constexpr float kNoWinnerLanes[kMaxBlock] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                         -1, -1, -1, -1, -1, -1, -1, -1};

// The gradient the pooling's backward writes at lane l of the pixel: dy where the winner is this position, +0
// elsewhere (as bits, the pooling's own select, which vectorises as CpuBatchNorm::ReluMasked does).
inline float pooled_dz(const PooledPixel& p, std::int64_t l) {
  const std::uint32_t keep = p.winners[l] == p.position ? ~std::uint32_t{0} : std::uint32_t{0};
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(p.dy[l]) & keep);
}

struct PooledRuns {
  const PooledGradient& g;
  std::int64_t area, width, block;
  auto operator()(std::int64_t off) const {
    const std::int64_t per_run = g.out_h * g.out_w * block, run = off / (area * block);
    const float* dy = g.dy + run * per_run;
    const float* winners = g.winners + run * per_run;
    return [=, out_h = g.out_h, out_w = g.out_w, block = block, width = width, h = std::int64_t{0},
            w = std::int64_t{0}]() mutable {
      PooledPixel p{kZeroLanes, kNoWinnerLanes, 0};
      if (h / 2 < out_h && w / 2 < out_w) {
        const std::int64_t at = ((h / 2) * out_w + w / 2) * block;
        p = {dy + at, winners + at, static_cast<float>((h % 2) * 2 + w % 2)};
      }
      if (++w == width) {
        w = 0;
        ++h;
      }
      return p;
    };
  }
};

class CpuBatchNorm final : public BatchNormKernels {
 public:
  void sums(const BnBatch& b, const float* x, std::vector<double>& out) override {
    const float* __restrict in = x;
    channel_sums(b, [in](std::int64_t i, std::int64_t) { return static_cast<double>(in[i]); }, nullptr, out);
  }

  void squared_deviations(const BnBatch& b, const float* x, const std::vector<double>& mean,
                          std::vector<double>& out) override {
    const float* __restrict in = x;
    const BnChannelMean split = split_mean(mean);  // x − mean as (x − hi) − lo in float, as normalise takes it
    const float *hi = split.hi.data(), *lo = split.lo.data();
    std::vector<double> none;
    channel_float_sums2(
        b,
        [in, hi, lo](std::int64_t i, std::int64_t c) {
          const float d = (in[i] - hi[c]) - lo[c];
          return d * d;
        },
        NoSum{}, nullptr, out, none);
  }

  void gradient_sums(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                     const std::vector<float>& inv_std, std::vector<double>& sdy, std::vector<double>& sdyx) override {
    if (b.relu_scale) return gradient_sums_of(b, relu_masked(b, dy, x, mean), x, mean, inv_std, sdy, sdyx);
    gradient_sums_of(b, Plain{dy}, x, mean, inv_std, sdy, sdyx);
  }

  void normalise(const BnBatch& b, const float* x, const BnChannelMean& mean, const std::vector<float>& scale,
                 const std::vector<float>& shift, float* y) override {
    const float *__restrict in = x, *hi = mean.hi.data(), *lo = mean.lo.data(), *s = scale.data(), *t = shift.data();
    float* __restrict out = y;
    if (b.relu) {
      channel_map(b, [=](std::int64_t i, std::int64_t c) {
        const float v = ((in[i] - hi[c]) - lo[c]) * s[c] + t[c];
        out[i] = v > 0.0f ? v : 0.0f;  // ops' relu_forward
      });
      return;
    }
    channel_map(b, [=](std::int64_t i, std::int64_t c) { out[i] = ((in[i] - hi[c]) - lo[c]) * s[c] + t[c]; });
  }

  void input_gradient(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                      const std::vector<float>& inv_std, const std::vector<float>& scale,
                      const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, float* dx) override {
    if (b.relu_scale)
      return input_gradient_of(b, relu_masked(b, dy, x, mean), x, mean, inv_std, scale, mean_dy, mean_dyx, dx);
    input_gradient_of(b, Plain{dy}, x, mean, inv_std, scale, mean_dy, mean_dyx, dx);
  }

  void pooled_gradient_sums(const BnBatch& b, const PooledGradient& g, const float* x, const BnChannelMean& mean,
                            const std::vector<float>& inv_std, std::vector<double>& sdy,
                            std::vector<double>& sdyx) override {
    const float *__restrict in = x, *hi = mean.hi.data(), *lo = mean.lo.data();
    sdy.assign(b.channels, 0.0);
    sdyx.assign(b.channels, 0.0);
    const auto f1 = [](const PooledPixel& p, std::int64_t, std::int64_t l, std::int64_t) { return pooled_dz(p, l); };
    const auto f2 = [in, hi, lo](const PooledPixel& p, std::int64_t i, std::int64_t l, std::int64_t c) {
      return pooled_dz(p, l) * ((in[i] - hi[c]) - lo[c]);
    };
    const PooledRuns runs{g, b.area, g.in_w, b.block};
    if (b.block == 8) return blocked_float_sums2<8>(b, runs, f1, f2, inv_std.data(), sdy, sdyx);
    MIRROR_CHECK(b.block == 16, kInternal, "a pooled gradient needs a blocked layout, got block " << b.block);
    blocked_float_sums2<16>(b, runs, f1, f2, inv_std.data(), sdy, sdyx);
  }

  void pooled_input_gradient(const BnBatch& b, const PooledGradient& g, const float* x, const BnChannelMean& mean,
                             const std::vector<float>& inv_std, const std::vector<float>& scale,
                             const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx,
                             float* dx) override {
    const float *__restrict in = x, *hi = mean.hi.data(), *lo = mean.lo.data(), *is = inv_std.data(),
                *s = scale.data(), *md = mean_dy.data(), *mdx = mean_dyx.data();
    float* __restrict out = dx;
    const auto f = [=](const PooledPixel& p, std::int64_t i, std::int64_t l, std::int64_t c) {
      const float xhat = ((in[i] - hi[c]) - lo[c]) * is[c];
      out[i] = s[c] * (pooled_dz(p, l) - md[c] - xhat * mdx[c]);
    };
    const PooledRuns runs{g, b.area, g.in_w, b.block};
    if (b.block == 8) return blocked_map<8>(b, runs, f);
    MIRROR_CHECK(b.block == 16, kInternal, "a pooled gradient needs a blocked layout, got block " << b.block);
    blocked_map<16>(b, runs, f);
  }

 private:
  // dy as the loops read it: as given, or through a fused ReLU's mask (ops' relu_backward: dy where y > 0). The
  // mask comes from x, not y: the forward's normalised value v = ((x − hi) − lo) · scale + shift, the same
  // expression and so the same bits, is > 0 exactly where y = relu(v) is, and x is read anyway (one stream fewer
  // than reading y). As bits (dy's where v > 0, +0 else), which GCC vectorises inside the double sums, where it
  // turns a select into a branch.
  struct Plain {
    const float* __restrict g;
    float operator()(std::int64_t i, std::int64_t) const { return g[i]; }
  };
  struct ReluMasked {
    const float *__restrict g, *__restrict x, *hi, *lo, *scale, *shift;
    float operator()(std::int64_t i, std::int64_t c) const {
      const float v = ((x[i] - hi[c]) - lo[c]) * scale[c] + shift[c];
      const std::uint32_t keep = v > 0.0f ? ~std::uint32_t{0} : std::uint32_t{0};
      return std::bit_cast<float>(std::bit_cast<std::uint32_t>(g[i]) & keep);
    }
  };
  static ReluMasked relu_masked(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean) {
    return {dy, x, mean.hi.data(), mean.lo.data(), b.relu_scale, b.relu_shift};
  }

  template <typename Dy>
  static void gradient_sums_of(const BnBatch& b, Dy g, const float* x, const BnChannelMean& mean,
                               const std::vector<float>& inv_std, std::vector<double>& sdy, std::vector<double>& sdyx) {
    const float *__restrict in = x, *hi = mean.hi.data(), *lo = mean.lo.data();
    channel_float_sums2(
        b, [g](std::int64_t i, std::int64_t c) { return g(i, c); },
        [g, in, hi, lo](std::int64_t i, std::int64_t c) { return g(i, c) * ((in[i] - hi[c]) - lo[c]); },
        inv_std.data(), sdy, sdyx);
  }

  template <typename Dy>
  static void input_gradient_of(const BnBatch& b, Dy g, const float* x, const BnChannelMean& mean,
                                const std::vector<float>& inv_std, const std::vector<float>& scale,
                                const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, float* dx) {
    const float *__restrict in = x, *hi = mean.hi.data(), *lo = mean.lo.data(), *is = inv_std.data(),
                *s = scale.data(), *md = mean_dy.data(), *mdx = mean_dyx.data();
    float* __restrict out = dx;
    channel_map(b, [=](std::int64_t i, std::int64_t c) {
      const float xhat = ((in[i] - hi[c]) - lo[c]) * is[c];
      out[i] = s[c] * (g(i, c) - md[c] - xhat * mdx[c]);
    });
  }
};

}  // namespace

#if defined(MIRROR_BN_CPU_AVX2)
std::unique_ptr<BatchNormKernels> make_batch_norm_cpu_avx2() { return std::make_unique<CpuBatchNorm>(); }
#else
std::unique_ptr<BatchNormKernels> make_batch_norm_cpu_baseline() { return std::make_unique<CpuBatchNorm>(); }
#endif

}  // namespace mirror::nn::detail
