// pool2d_kernels.h (private) — what Pool2d runs on one device, for one input shape, layout and mode: loops on
// the CPU (pool2d_cpu.cc over NCHW, pool2d_cpu_blocked.cc over nChw8c / nChw16c: y, dy and dx then lie in x's
// blocked layout too) or cuDNN's (cuda/pool2d_cuda.cc, CUDA builds only, NCHW). Pool2d (pool2d.cc) keeps the
// layer's logic. Pointers are memory of the device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "bn_hand_over.h"
#include "mirror/error.h"
#include "mirror/nn/pool2d.h"

namespace mirror::nn::detail {

// One output's window clipped to the input plane (in_h × in_w): rows [h0, h1), columns [w0, w1). Shared by
// the NCHW and the blocked loops, so both visit the same positions in the same order.
struct ClippedWindow {
  std::int64_t h0, h1, w0, w1;
};

inline ClippedWindow clip_window(const Pool2dWindow& w, std::int64_t oh, std::int64_t ow, std::int64_t in_h,
                                 std::int64_t in_w) {
  const std::int64_t h = oh * w.stride_h - w.pad_h, c = ow * w.stride_w - w.pad_w;
  return {std::max<std::int64_t>(h, 0), std::min(h + w.kernel_h, in_h), std::max<std::int64_t>(c, 0),
          std::min(c + w.kernel_w, in_w)};
}

// The common 2×2 window, stride 2, no padding: non-overlapping windows, with branch-free loops on both layouts.
inline bool is_2x2_stride_2(const Pool2dWindow& w) {
  return w.kernel_h == 2 && w.kernel_w == 2 && w.stride_h == 2 && w.stride_w == 2 && w.pad_h == 0 && w.pad_w == 0;
}

class Pool2dKernels {
 public:
  virtual ~Pool2dKernels() = default;
  // y = pool(x). In training, remembers what backward needs (max pooling: each window's winner).
  virtual void forward(const float* x, float* y) = 0;
  // dx from dy; x and y are the last training forward's input and output (still alive, unchanged).
  virtual void backward(const float* x, const float* y, const float* dy, float* dx) = 0;
  // True when these kernels do the problem's relu and y_layout themselves: forward writes y = [relu] pool(x) in
  // y_layout and backward takes that dy (and ignores x and y). Otherwise y and dy are pool(x) in x's layout and
  // the layer applies the ReLU and reorders (pool2d.cc).
  virtual bool fused() const { return false; }
  // forward of the values affine(x) (the normalisation a BatchNorm2d before the layer handed over,
  // bn_hand_over.h), each computed as that layer computes it, as they are read. Only fused() 2×2 max pooling.
  virtual void forward_normalised(const float* x, const ChannelAffine& affine, float* y) {
    MIRROR_CHECK(false, kInternal, "these pooling kernels take no normalisation");
  }
  // After a training forward_normalised: per output lane of the blocked layout of x, its window's winner as a
  // float (bn_hand_over.h's PooledGradient::winners); null for other kernels.
  virtual const float* normalised_winners() const { return nullptr; }
};

struct Pool2dProblem {
  Pool2dWindow window;
  PoolMode mode = PoolMode::kMax;
  bool training = false;
  Shape x_shape, y_shape;
  Device device;
  Layout layout = Layout::kNchw;  // of x and dx (blocked only on the CPU); of y and dy unless fused()
  // What the layer gives out, for kernels that can do it in the same pass (fused()): y in y_layout, and
  // y = relu(pool(x)) when relu (a ReLU the layer absorbed).
  Layout y_layout = Layout::kNchw;
  bool relu = false;
};

// The NCHW loops, or for a blocked layout the blocked ones: the one-pass 2×2 stride-2 max pooling
// (pool2d_cpu_max2x2.cc, fused) or else the general loops (pool2d_cpu_blocked.cc), each in its AVX2 build where
// cpu_loops_use_avx2 says so (cpu_loops_isa.h), else the baseline one.
std::unique_ptr<Pool2dKernels> make_pool2d_cpu(const Pool2dProblem& problem);
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_blocked_baseline(const Pool2dProblem& problem);
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_blocked_avx2(const Pool2dProblem& problem);  // x86-64 with GCC only
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_max2x2_baseline(const Pool2dProblem& problem);
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_max2x2_avx2(const Pool2dProblem& problem);  // x86-64 with GCC only
#if MIRROR_HAVE_CUDA
std::unique_ptr<Pool2dKernels> make_pool2d_cuda(const Pool2dProblem& problem);
#endif

}  // namespace mirror::nn::detail
