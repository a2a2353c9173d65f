// batch_norm2d_kernels.h (private) — the bulk loops of BatchNorm2d on one device: per-channel sums over an
// [N, C, H, W] batch, and the element-wise normalisation and input gradient. The per-channel statistics are
// small host vectors (C values) that the layer computes with (batch_norm2d.cc); x, y, dy, dx are memory of the
// device. CPU: batch_norm2d_cpu.cc (vectorised loops); CUDA: cuda/batch_norm2d_cuda.cu (one block per
// channel, fixed reduction order, so the sums repeat bit for bit).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bn_hand_over.h"
#include "mirror/error.h"
#include "mirror/nn/batch_norm2d.h"

namespace mirror::nn::detail {

struct BnBatch {
  std::int64_t n = 0, channels = 0, area = 0;  // area = H·W
  std::int64_t block = 1;  // channel block of the layout (tensor.h): 1 for NCHW, 8 or 16 (CPU only)
  // A ReLU fused after the normalisation (CPU only: BatchNorm2d::absorb_following_relu): normalise writes
  // relu(y) (y > 0 ? y : 0), and gradient_sums / input_gradient take dy · [y > 0] wherever they read dy: exactly
  // the ReLU layer's values, without its passes. Backward passes the forward's map (relu_scale, relu_shift: its
  // scale and shift, with the mean the loops are given), from which the loops recompute y's sign from x.
  bool relu = false;
  const float* relu_scale = nullptr;
  const float* relu_shift = nullptr;
};

// BnChannelMean (mirror/nn/batch_norm2d.h): mean = hi + lo per channel, two floats, so that x − hi is
// exact near the mean and a large mean keeps its digits.
inline BnChannelMean split_mean(const std::vector<double>& mean) {
  BnChannelMean m;
  for (double v : mean) {
    m.hi.push_back(static_cast<float>(v));
    m.lo.push_back(static_cast<float>(v - m.hi.back()));
  }
  return m;
}

class BatchNormKernels {
 public:
  virtual ~BatchNormKernels() = default;
  // out[c] = Σ x over channel c.
  virtual void sums(const BnBatch& b, const float* x, std::vector<double>& out) = 0;
  // out[c] = Σ (x − mean[c])² over channel c.
  virtual void squared_deviations(const BnBatch& b, const float* x, const std::vector<double>& mean,
                                  std::vector<double>& out) = 0;
  // sdy[c] = Σ dy, sdyx[c] = Σ dy · (x − mean) · inv_std[c] over channel c.
  virtual void gradient_sums(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                             const std::vector<float>& inv_std, std::vector<double>& sdy, std::vector<double>& sdyx) = 0;
  // y = ((x − hi) − lo) · scale[c] + shift[c].
  virtual void normalise(const BnBatch& b, const float* x, const BnChannelMean& mean, const std::vector<float>& scale,
                         const std::vector<float>& shift, float* y) = 0;
  // dx = scale[c] · (dy − mean_dy[c] − x̂ · mean_dyx[c]), x̂ = ((x − hi) − lo) · inv_std[c].
  virtual void input_gradient(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                              const std::vector<float>& inv_std, const std::vector<float>& scale,
                              const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, float* dx) = 0;
  // gradient_sums and input_gradient with dy the gradient that the 2×2 max pooling after the layer would have
  // given back (bn_hand_over.h): g.dy at each window's winner, +0 at every other value. Blocked layouts only
  // (b.block 8 or 16; no relu_scale: the pooling applied the ReLU); the CPU's loops only.
  virtual void pooled_gradient_sums(const BnBatch& b, const PooledGradient& g, const float* x,
                                    const BnChannelMean& mean, const std::vector<float>& inv_std,
                                    std::vector<double>& sdy, std::vector<double>& sdyx) {
    MIRROR_CHECK(false, kInternal, "these BatchNorm2d kernels take no pooled gradient");
  }
  virtual void pooled_input_gradient(const BnBatch& b, const PooledGradient& g, const float* x,
                                     const BnChannelMean& mean, const std::vector<float>& inv_std,
                                     const std::vector<float>& scale, const std::vector<float>& mean_dy,
                                     const std::vector<float>& mean_dyx, float* dx) {
    MIRROR_CHECK(false, kInternal, "these BatchNorm2d kernels take no pooled gradient");
  }
};

// The CPU loops for this CPU (batch_norm2d_cpu_select.cc): the AVX2 build or the baseline one (cpu_loops_isa.h).
std::unique_ptr<BatchNormKernels> make_batch_norm_cpu();
std::unique_ptr<BatchNormKernels> make_batch_norm_cpu_baseline();
std::unique_ptr<BatchNormKernels> make_batch_norm_cpu_avx2();  // x86-64 with GCC only
#if MIRROR_HAVE_CUDA
std::unique_ptr<BatchNormKernels> make_batch_norm_cuda(Device device);
#endif

}  // namespace mirror::nn::detail
