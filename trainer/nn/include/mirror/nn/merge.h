// mirror/nn/merge.h — Merge, the base of the model graph's layers of two or more inputs (add, concat): the
// single-input forms of the Layer interface refuse one input with a clear error, so a merge implements only the
// several-input ones (Layer::output_sample_shape_of, forward_inputs, backward_inputs).
#pragma once

#include <string>

#include "mirror/nn/layer.h"

namespace mirror::nn {

class Merge : public Layer {
 public:
  Shape output_sample_shape(const Shape& input_sample_shape) const final {
    return output_sample_shape_of(std::span<const Shape>(&input_sample_shape, 1));
  }
  const Tensor& forward(const Tensor& x) final {
    const Tensor* xs[] = {&x};
    return forward_inputs(xs);
  }
  const Tensor* backward(const Tensor&, GradMode, bool, const LayerGradReady&) final;

 protected:
  // kInvalidArgument unless there are two or more inputs: "<kind> merges two or more inputs, got 1; ...".
  void check_input_count(std::size_t count) const;
};

}  // namespace mirror::nn
