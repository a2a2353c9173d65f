// mirror/train/pool2d.h — what MaxPool2d and AvgPool2d share: the pooling window (kernel, stride, zero padding
// per axis, PyTorch's floor mode: output (in + 2·pad − kernel) / stride + 1 rounded down, pad ≤ kernel / 2 as
// PyTorch requires) and the oneDNN pooling primitives that run it on the CPU (pool2d.cc). NCHW batches; the
// channel count passes through. Layers: max_pool2d.h, avg_pool2d.h.
#pragma once

#include <memory>

#include "mirror/train/layer.h"

namespace mirror::train {

struct Pool2dWindow {
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
};

enum class PoolMode {
  kMax,                // max over the window; padding never wins (as if −inf)
  kAverageIncludePad,  // sum over the window / (kernel_h · kernel_w), padded zeros counted (PyTorch's default)
};

class Pool2d : public Layer {
 public:
  ~Pool2d() override;

  // [C, H, W] -> [C, OH, OW]; kInvalidArgument when not 3-D or smaller than the window after padding.
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  // x: [N, C, H, W]. In training, max pooling keeps which element won each window for backward.
  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  const Pool2dWindow& window() const { return window_; }
  PoolMode mode() const { return mode_; }

 protected:
  // Throws kInvalidArgument for a non-positive kernel or stride, padding < 0 or > kernel / 2, or a CUDA
  // device (not written yet).
  Pool2d(Pool2dWindow window, PoolMode mode, Device device);

 private:
  struct Primitives;  // pool2d.cc
  Primitives& primitives_for(const Shape& x_shape, bool training);

  Pool2dWindow window_;
  PoolMode mode_;
  Device device_;
  Tensor y_, dx_;
  std::unique_ptr<Primitives> prims_;
  bool have_workspace_ = false;  // the last forward was a training forward (max pooling's backward needs it)
};

}  // namespace mirror::train
