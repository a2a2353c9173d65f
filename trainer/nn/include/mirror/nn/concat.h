// mirror/nn/concat.h — Concat, a merge of the model graph: two or more inputs joined along the feature axis,
// in the order given: F of [F] samples, C of [C, H, W], the last axis of [T, C]; every other dimension must
// match. Backward hands each input its slab of dy.
#pragma once

#include <memory>

#include "mirror/nn/merge.h"

namespace mirror::nn {

struct LayerArgs;

class Concat final : public Merge {
 public:
  explicit Concat(Device device) : device_(device), y_({0}, device) {}
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "concat", "inputs": [...]}

  std::string kind() const override { return "concat"; }
  // The axis of a sample shape that concat joins along: 1 for [T, C], else 0.
  static std::size_t feature_axis(const Shape& sample_shape) { return sample_shape.size() == 2 ? 1 : 0; }

  Shape output_sample_shape_of(std::span<const Shape> inputs) const override;
  const Tensor& forward_inputs(std::span<const Tensor* const> xs) override;
  std::vector<const Tensor*> backward_inputs(const Tensor& dy, GradMode mode, bool need_dx,
                                             const LayerGradReady& grad_ready) override;

 private:
  // Rows of the batch's slabs (batch × the dimensions before the axis) and each input's row length (values).
  struct Slabs {
    std::size_t rows = 0;
    std::vector<std::size_t> widths;
    std::size_t total = 0;
  };
  Slabs slabs_of(const Shape& first_batch_shape, const std::vector<Shape>& batch_shapes) const;

  Device device_;
  Tensor y_;
  std::vector<Shape> input_shapes_;  // of the last forward's batch
  std::vector<Tensor> dx_;
};

}  // namespace mirror::nn
