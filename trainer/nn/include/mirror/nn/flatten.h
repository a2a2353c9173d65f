// mirror/nn/flatten.h — Flatten: [batch, C, H, W] (any sample shape) as [batch, C·H·W] in C, H, W order
// (PyTorch's nn.Flatten), a view without a copy; backward gives dy the input's shape back.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

class Flatten final : public Layer {
 public:
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "flatten"}

  std::string kind() const override { return "flatten"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  Shape input_shape_;  // of the last forward's batch
  Tensor y_, dx_;      // views
};

}  // namespace mirror::nn
