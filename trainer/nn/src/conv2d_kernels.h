// conv2d_kernels.h (private) — what Conv2d runs on one device, for one input shape: the CPU's oneDNN
// primitives (conv2d_cpu.cc) or cuDNN (cuda/conv2d_cuda.cc, CUDA builds only). Conv2d (conv2d.cc) keeps the
// layer's logic (shapes, checks, grad_ready order) and calls these. Pointers are memory of the device; every
// call is queued in order (CPU: done on return; CUDA: the legacy default stream).
#pragma once

#include <memory>
#include <string>

#include "mirror/nn/conv2d.h"

namespace mirror::nn::detail {

class Conv2dKernels {
 public:
  virtual ~Conv2dKernels() = default;
  // y = conv(x, w) (+ b when b is not null).
  virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
  // dw (and db when not null) = the gradients from x and dy; added to what is there when accumulate.
  virtual void backward_weights(const float* x, const float* dy, float* dw, float* db, bool accumulate) = 0;
  // dx = the input gradient from dy and w.
  virtual void backward_data(const float* dy, const float* w, float* dx) = 0;
  // Layout of y (and so of dy) as forward writes it; x and dx are in Conv2dProblem::x_layout.
  virtual Layout y_layout() const { return Layout::kNchw; }
  // The library's names of the kernels chosen, forward / backward data / backward weights (oneDNN's
  // impl_info_str, e.g. "jit_wino_4x3:avx512_core"); empty where the library does not say.
  virtual std::string implementation() const { return {}; }
};

struct Conv2dProblem {
  Conv2dGeometry geometry;
  bool bias = false;
  ConvLayout layout = ConvLayout::kAuto;
  Shape x_shape, y_shape;  // [N, C, H, W], [N, O, OH, OW]
  Device device;
  Layout x_layout = Layout::kNchw;  // of x (and dx)
  bool blocked_output = false;      // y may be given in a blocked layout (the next layer takes it)
  bool bf16 = false;                // bfloat16 operands (precision.h)
};

std::unique_ptr<Conv2dKernels> make_conv2d_cpu(const Conv2dProblem& problem);
#if MIRROR_HAVE_CUDA
std::unique_ptr<Conv2dKernels> make_conv2d_cuda(const Conv2dProblem& problem);
#endif

}  // namespace mirror::nn::detail
