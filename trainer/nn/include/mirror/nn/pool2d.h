// mirror/nn/pool2d.h — what MaxPool2d and AvgPool2d share: the pooling window (kernel, stride, zero padding
// per axis, PyTorch's floor mode: output (in + 2·pad − kernel) / stride + 1 rounded down, pad ≤ kernel / 2 as
// PyTorch requires) and the pooling that runs it: loops on the CPU, cuDNN on CUDA (pool2d.cc). NCHW batches, and
// on the CPU channel-blocked ones too (tensor.h's Layout, computed in that layout); the channel count passes
// through. Layers: max_pool2d.h, avg_pool2d.h.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

namespace detail {
class Pool2dKernels;    // the device's arithmetic (src/pool2d_kernels.h)
class LayoutConverter;  // src/layout_bridge.h
struct NormalisationHandOver;  // src/bn_hand_over.h
}  // namespace detail

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
  // Blocked inputs on the CPU, pooled in their layout; y stays in it when the model allows (set_blocked_output),
  // else is reordered to NCHW (a tensor kh·kw times smaller than x for the usual windows); dx in x's layout.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;
  // Max pooling takes over a ReLU before it: y = relu(max(x)), the same values and gradients as max(relu(x))
  // (the winner of a window with a positive maximum is the same; any other window passes no gradient either way).
  // The fusion pass (chain_fusion.h) found a ReLU right before this max pooling: returns true when the pooling
  // now applies it to its output (max∘relu = relu∘max exactly, on the smaller tensor), the ReLU then running
  // as the identity. Called once, before the first forward.
  bool absorb_preceding_relu();
  // A BatchNorm2d right before this layer (an absorbed ReLU between them) hands its normalisation over
  // (chain_fusion.h, src/bn_hand_over.h): true when this layer takes it (max pooling 2×2 stride 2 on the CPU),
  // from then on applying the map to blocked inputs as it reads them and handing its output gradient and winners
  // back instead of dx. Called once, before the first forward.
  bool take_normalisation(std::shared_ptr<detail::NormalisationHandOver> from);
  // Whether the last forward applied a handed-over normalisation (tests).
  bool normalised_input() const { return normalised_; }

  // Whether it applies the ReLU before it (absorb_preceding_relu).
  bool applies_relu() const { return relu_after_; }
  const Pool2dWindow& window() const { return window_; }
  PoolMode mode() const { return mode_; }

 protected:
  // Throws kInvalidArgument for a non-positive kernel or stride, or padding < 0 or > kernel / 2.
  Pool2d(Pool2dWindow window, PoolMode mode, Device device);

 private:
  detail::Pool2dKernels& kernels_for(const Shape& x_shape, const Shape& y_shape, Layout layout, bool training);

  Pool2dWindow window_;
  PoolMode mode_;
  Device device_;
  const Tensor* x_ = nullptr;  // input of the last forward when it was a training forward, else null
  bool relu_after_ = false;    // absorb_preceding_relu: y_ = relu(pooled_)
  std::shared_ptr<detail::NormalisationHandOver> hand_over_;  // take_normalisation
  bool normalised_ = false;                                  // the last forward took the hand-over's map
  Tensor y_, dx_, pooled_, dy_pooled_;
  // A blocked x whose y goes out NCHW: y in x's layout (y_x_layout_), reordered to y_; dy reordered back to x's
  // layout (dy_x_layout_).
  Tensor y_x_layout_, dy_x_layout_;
  std::unique_ptr<detail::LayoutConverter> y_to_nchw_, dy_to_x_layout_;
  std::unique_ptr<detail::Pool2dKernels> kernels_;
  Shape kernels_shape_;  // what kernels_ were built for
  Layout kernels_layout_ = Layout::kNchw;
  bool kernels_training_ = false;
  bool kernels_relu_ = false, kernels_blocked_output_ = false;
};

}  // namespace mirror::nn
