// mirror/nn/activation.h — element-wise activations. ReLU: y = max(x, 0), dx = dy · [y > 0].
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

class ReLU final : public Layer {
 public:
  // Element-wise, so any layout on the CPU: y and dx in x's.
  explicit ReLU(Device device) : device_(device), y_({0}, device), dx_({0}, device) { accepts_blocked_ = device.is_cpu(); }
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "relu"}

  std::string kind() const override { return "relu"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override { return input_sample_shape; }
  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  Device device_;
  Tensor y_, dx_;
};

}  // namespace mirror::nn
