// pool2d_kernels.h (private) — what Pool2d runs on one device, for one input shape, layout and mode: loops on
// the CPU (pool2d_cpu.cc over NCHW, pool2d_cpu_blocked.cc over nChw8c / nChw16c: y, dy and dx then lie in x's
// blocked layout too) or cuDNN's (cuda/pool2d_cuda.cc, CUDA builds only, NCHW). Pool2d (pool2d.cc) keeps the
// layer's logic. Pointers are memory of the device.
#pragma once

#include <memory>

#include "mirror/nn/pool2d.h"

namespace mirror::nn::detail {

class Pool2dKernels {
 public:
  virtual ~Pool2dKernels() = default;
  // y = pool(x). In training, remembers what backward needs (max pooling: each window's winner).
  virtual void forward(const float* x, float* y) = 0;
  // dx from dy; x and y are the last training forward's input and output (still alive, unchanged).
  virtual void backward(const float* x, const float* y, const float* dy, float* dx) = 0;
};

struct Pool2dProblem {
  Pool2dWindow window;
  PoolMode mode = PoolMode::kMax;
  bool training = false;
  Shape x_shape, y_shape;
  Device device;
  Layout layout = Layout::kNchw;  // of x, y, dy and dx (blocked only on the CPU)
};

// The NCHW loops, or make_pool2d_cpu_blocked's for a blocked layout.
std::unique_ptr<Pool2dKernels> make_pool2d_cpu(const Pool2dProblem& problem);
std::unique_ptr<Pool2dKernels> make_pool2d_cpu_blocked(const Pool2dProblem& problem);
#if MIRROR_HAVE_CUDA
std::unique_ptr<Pool2dKernels> make_pool2d_cuda(const Pool2dProblem& problem);
#endif

}  // namespace mirror::nn::detail
