// mirror/nn/gelu.h — GELU in the tanh approximation GPT-2 uses (PyTorch's approximate="tanh", Hugging Face's
// gelu_new): y = x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))), element-wise on any shape. CPU.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

class Gelu final : public Layer {
 public:
  // kInvalidArgument on a device without its kernels (CUDA, for now).
  explicit Gelu(Device device);
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "gelu"}

  std::string kind() const override { return "gelu"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override { return input_sample_shape; }
  const Tensor& forward(const Tensor& x) override;
  // dx = dy · gelu'(x), from the x of the last forward.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  Device device_;
  const Tensor* x_ = nullptr;
  Tensor y_, dx_;
};

}  // namespace mirror::nn
