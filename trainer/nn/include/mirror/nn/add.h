// mirror/nn/add.h — Add, a merge of the model graph: y = x1 + x2 + ... over two or more inputs of one shape
// (summed left to right); backward hands dy to every input unchanged.
#pragma once

#include <memory>

#include "mirror/nn/merge.h"

namespace mirror::nn {

struct LayerArgs;

class Add final : public Merge {
 public:
  explicit Add(Device device) : device_(device), y_({0}, device) {}
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "add", "inputs": [...]}

  std::string kind() const override { return "add"; }
  Shape output_sample_shape_of(std::span<const Shape> inputs) const override;
  const Tensor& forward_inputs(std::span<const Tensor* const> xs) override;
  std::vector<const Tensor*> backward_inputs(const Tensor& dy, GradMode mode, bool need_dx,
                                             const LayerGradReady& grad_ready) override;

 private:
  Device device_;
  Tensor y_;
  std::size_t inputs_ = 0;  // of the last forward
};

}  // namespace mirror::nn
