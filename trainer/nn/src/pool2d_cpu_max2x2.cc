// pool2d_cpu_max2x2.cc — the common pooling of a CNN on the CPU in one pass (pool2d_kernels.h): 2×2 stride-2 max
// pooling of a channel-blocked x (nChw8c / nChw16c), with the ReLU the layer absorbed folded in, y written
// straight in the layout it leaves the layer in (x's blocked layout, or NCHW for a Flatten after it), and dy
// read back in that layout. It replaces three passes over y (pool, ReLU, oneDNN's reorder to NCHW) and three over
// dy (ReLU backward, reorder, unpool) by one each, and keeps each window's winner as one byte per lane (0–3, its
// position in the window in row-major order; 4: the ReLU zeroed the output) instead of a 4-byte index.
// Every lane does what pool2d_cpu_blocked.cc's 2×2 loop and ops::relu_* do for its channel — the same comparisons
// in the same order (ties to the first position), y = m > 0 ? m : 0, dx = dy at the winner where y > 0, zeros
// elsewhere — so results are the same bits (tests/nn: test_nn_pool_layers, test_nn_blocked_layouts).
// NCHW goes through a per-block tile of B × OH·OW floats (L1-sized for a CNN's pooled planes), transposed on the
// way out and on the way in.
// This file builds the baseline (x86-64: SSE2) loops; pool2d_cpu_max2x2_avx2.cc includes it again for AVX2 (GCC's
// target pragma below, after the library headers), as pool2d_cpu_blocked_avx2.cc does.
#include <cstdint>
#include <vector>

#include "pool2d_kernels.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#if defined(MIRROR_POOL_CPU_AVX2)
#pragma GCC target("avx2")
#endif

namespace mirror::nn::detail {
namespace {

constexpr float kReluZeroed = 4.0f;  // the winner code of a window whose output the ReLU set to 0

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols (cols a multiple of 8): the transposes
// between a blocked tile and NCHW planes; in the AVX2 build 8×8 at a time in registers (unpack, shuffle, permute:
// exact moves).
void transpose(const float* src, std::int64_t src_stride, float* dst, std::int64_t dst_stride, std::int64_t rows,
               std::int64_t cols) {
  std::int64_t r = 0;
#if defined(MIRROR_POOL_CPU_AVX2)
  for (; r + 8 <= rows; r += 8)
    for (std::int64_t c = 0; c < cols; c += 8) {
      const float* s = src + r * src_stride + c;
      float* d = dst + c * dst_stride + r;
      __m256 v[8], t[8];
      for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(s + i * src_stride);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        v[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        v[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        v[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        v[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
      }
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(d + i * dst_stride, _mm256_permute2f128_ps(v[i], v[i + 4], 0x20));
        _mm256_storeu_ps(d + (i + 4) * dst_stride, _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
      }
    }
#endif
  for (std::int64_t left = rows - r; left > 0; --left, ++r)  // the rows the 8×8 blocks left (all of them
    for (std::int64_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];  // at baseline)
}

// out[l] = code[l] (0–4, exact in a float) for the B lanes of a pixel: with SSE2 four at a time converted and
// packed down to bytes (GCC does not vectorise the narrowing loop).
template <std::int64_t B>
void store_codes(const float* code, std::uint8_t* out) {
#if defined(__SSE2__)
  for (std::int64_t l = 0; l < B; l += 8) {
    const __m128i lo =
        _mm_packs_epi32(_mm_cvttps_epi32(_mm_loadu_ps(code + l)), _mm_cvttps_epi32(_mm_loadu_ps(code + l + 4)));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + l), _mm_packus_epi16(lo, lo));
  }
#else
  for (std::int64_t l = 0; l < B; ++l) out[l] = static_cast<std::uint8_t>(static_cast<std::int32_t>(code[l]));
#endif
}

template <std::int64_t B>
class BlockedMax2x2 final : public Pool2dKernels {
 public:
  explicit BlockedMax2x2(const Pool2dProblem& p)
      : blocks_(p.x_shape[0] * p.x_shape[1] / B), blocks_per_sample_(p.x_shape[1] / B), in_h_(p.x_shape[2]),
        in_w_(p.x_shape[3]), out_h_(p.y_shape[2]),
        out_w_(p.y_shape[3]), relu_(p.relu), y_nchw_(p.y_layout == Layout::kNchw) {
    if (p.training) winner_.resize(static_cast<std::size_t>(blocks_ * out_size()));
    if (y_nchw_) tile_.resize(static_cast<std::size_t>(out_size()));
  }

  bool fused() const override { return true; }

  void forward(const float* x, float* y) override { run_forward(x, nullptr, y); }
  void forward_normalised(const float* x, const ChannelAffine& affine, float* y) override {
    run_forward(x, &affine, y);
  }
  const float* normalised_winners() const override { return float_winner_.data(); }

  void backward(const float*, const float*, const float* dy, float* dx) override {
    for (std::int64_t k = 0; k < blocks_; ++k) {
      const float* g = dy + k * out_size();
      if (y_nchw_) {
        planes_to_tile(g);
        g = tile_.data();
      }
      unpool_block(g, winner_.data() + k * out_size(), dx + k * in_size());
    }
  }

 private:
  std::int64_t in_size() const { return in_h_ * in_w_ * B; }    // floats of one block of x (and of dx)
  std::int64_t out_size() const { return out_h_ * out_w_ * B; }  // of y (and of dy, and the winners): one block,
                                                                 // or in NCHW the B planes of its channels

  // Training keeps the winners: as bytes for this kernel's backward, or with affine as floats
  // (normalised_winners) for the BatchNorm's backward, which then takes this pooling's place.
  void run_forward(const float* x, const ChannelAffine* affine, float* y) {
    const bool training = !winner_.empty();
    if (affine != nullptr && training) float_winner_.resize(winner_.size());
    for (std::int64_t k = 0; k < blocks_; ++k) {
      float* out = y_nchw_ ? tile_.data() : y + k * out_size();
      std::uint8_t* win = training ? winner_.data() + k * out_size() : nullptr;
      const float* in = x + k * in_size();
      if (affine != nullptr) {
        const std::int64_t c0 = k % blocks_per_sample_ * B;
        const BlockAffine a{affine->hi + c0, affine->lo + c0, affine->scale + c0, affine->shift + c0};
        float* fwin = training ? float_winner_.data() + k * out_size() : nullptr;
        if (relu_)
          pool_block<true, true>(in, out, nullptr, fwin, a);
        else
          pool_block<false, true>(in, out, nullptr, fwin, a);
      } else if (relu_) {
        pool_block<true, false>(in, out, win, nullptr, {});
      } else {
        pool_block<false, false>(in, out, win, nullptr, {});
      }
      if (y_nchw_) tile_to_planes(y + k * out_size());
    }
  }

  // The affine map of one block's B channels (ChannelAffine from the block's first channel on).
  struct BlockAffine {
    const float *hi, *lo, *scale, *shift;
  };

  // One block: y (blocked) = [relu] max of each window of x, or with kAffine of affine(x) (BatchNorm2d's
  // normalise, the same expression), and its winner where win (a byte) or fwin (a float) is given (training).
  template <bool kRelu, bool kAffine>
  void pool_block(const float* x, float* y, std::uint8_t* win, float* fwin, const BlockAffine& m) const {
    const float *__restrict hi = m.hi, *__restrict lo = m.lo, *__restrict s = m.scale, *__restrict t = m.shift;
    const auto value = [=](const float* __restrict p, std::int64_t l) {
      if constexpr (kAffine) return ((p[l] - hi[l]) - lo[l]) * s[l] + t[l];
      return p[l];
    };
    for (std::int64_t oh = 0; oh < out_h_; ++oh) {
      const float* r0 = x + 2 * oh * in_w_ * B;
      const float* r1 = r0 + in_w_ * B;
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const float* __restrict a = r0 + 2 * ow * B;
        const float* __restrict c = r1 + 2 * ow * B;
        float* __restrict yo = y + (oh * out_w_ + ow) * B;
        if (win == nullptr && fwin == nullptr) {
#pragma omp simd
          for (std::int64_t l = 0; l < B; ++l) {
            const float v =
                std::max(std::max(value(a, l), value(a + B, l)), std::max(value(c, l), value(c + B, l)));
            yo[l] = kRelu ? (v > 0.0f ? v : 0.0f) : v;
          }
          continue;
        }
        // The code as a float beside best, so that GCC vectorises the selects (with integer constants it does
        // not); stored narrowed.
        float code_here[B];
        float* __restrict code = fwin != nullptr ? fwin + (oh * out_w_ + ow) * B : code_here;
#pragma omp simd
        for (std::int64_t l = 0; l < B; ++l) {
          const float v1 = value(a + B, l), v2 = value(c, l), v3 = value(c + B, l);
          float best = value(a, l), at = 0.0f;
          at = v1 > best ? 1.0f : at;
          best = v1 > best ? v1 : best;
          at = v2 > best ? 2.0f : at;
          best = v2 > best ? v2 : best;
          at = v3 > best ? 3.0f : at;
          best = v3 > best ? v3 : best;
          if (kRelu) {
            at = best > 0.0f ? at : kReluZeroed;
            best = best > 0.0f ? best : 0.0f;
          }
          yo[l] = best;
          code[l] = at;
        }
        if (win != nullptr) store_codes<B>(code, win + (oh * out_w_ + ow) * B);
      }
    }
  }

  // One block of dx from its dy (blocked): each window's four dx written once (the winner's lane gets dy, the
  // others 0), and the row and column no window reaches (odd sizes) cleared.
  void unpool_block(const float* dy, const std::uint8_t* win, float* dx) const {
    for (std::int64_t oh = 0; oh < out_h_; ++oh) {
      float* r0 = dx + 2 * oh * in_w_ * B;
      float* r1 = r0 + in_w_ * B;
      for (std::int64_t ow = 0; ow < out_w_; ++ow) {
        const float* __restrict g = dy + (oh * out_w_ + ow) * B;
        const std::uint8_t* __restrict at = win + (oh * out_w_ + ow) * B;
        float* __restrict a = r0 + 2 * ow * B;
        float* __restrict c = r1 + 2 * ow * B;
#if defined(MIRROR_POOL_CPU_AVX2)
        // By hand: GCC widens the bytes through the stack, and the wide reload of narrow stores stalls.
        for (std::int64_t l = 0; l < B; l += 8) {
          const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(at + l)));
          const __m256 gl = _mm256_loadu_ps(g + l);
          const auto pass = [&](int j) {  // gl where the winner is position j, else +0
            return _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(w, _mm256_set1_epi32(j))), gl);
          };
          _mm256_storeu_ps(a + l, pass(0));
          _mm256_storeu_ps(a + B + l, pass(1));
          _mm256_storeu_ps(c + l, pass(2));
          _mm256_storeu_ps(c + B + l, pass(3));
        }
#else
#pragma omp simd
        for (std::int64_t l = 0; l < B; ++l) {  // every value computed before the stores: they if-convert
          const float gl = g[l];
          const std::int32_t w = at[l];
          const float v0 = w == 0 ? gl : 0.0f, v1 = w == 1 ? gl : 0.0f;
          const float v2 = w == 2 ? gl : 0.0f, v3 = w == 3 ? gl : 0.0f;
          a[l] = v0;
          a[B + l] = v1;
          c[l] = v2;
          c[B + l] = v3;
        }
#endif
      }
      std::fill(r0 + 2 * out_w_ * B, r0 + in_w_ * B, 0.0f);
      std::fill(r1 + 2 * out_w_ * B, r1 + in_w_ * B, 0.0f);
    }
    std::fill(dx + 2 * out_h_ * in_w_ * B, dx + in_size(), 0.0f);
  }

  // tile_ (one block, pixel-major: B lanes a pixel) to the B NCHW planes of its channels, and back.
  void tile_to_planes(float* planes) const { transpose(tile_.data(), B, planes, out_h_ * out_w_, out_h_ * out_w_, B); }
  void planes_to_tile(const float* planes) {
    const std::int64_t n = out_h_ * out_w_;
    // rows = the B lanes, cols = the pixels: those of whole 8×8 blocks through transpose, the tail per element.
    const std::int64_t whole = n / 8 * 8;
    transpose(planes, n, tile_.data(), B, B, whole);
    for (std::int64_t p = whole; p < n; ++p)
      for (std::int64_t l = 0; l < B; ++l) tile_[static_cast<std::size_t>(p * B + l)] = planes[l * n + p];
  }

  std::int64_t blocks_, blocks_per_sample_, in_h_, in_w_, out_h_, out_w_;
  bool relu_, y_nchw_;
  std::vector<std::uint8_t> winner_;  // training: per output lane, its window's winner code
  std::vector<float> float_winner_;   // the same as floats, after a training forward_normalised
  std::vector<float> tile_;           // y_nchw_: one block of y or dy in the blocked layout
};

}  // namespace

#if defined(MIRROR_POOL_CPU_AVX2)
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_max2x2_avx2(const Pool2dProblem& problem) {
#else
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_max2x2_baseline(const Pool2dProblem& problem) {
#endif
  if (channel_block(problem.layout) == 16) return std::make_unique<BlockedMax2x2<16>>(problem);
  return std::make_unique<BlockedMax2x2<8>>(problem);
}

}  // namespace mirror::nn::detail
