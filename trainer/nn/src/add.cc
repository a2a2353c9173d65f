// add.cc — mirror/nn/add.h: a copy of the first input and one axpy per further input (ops.h, either device).
#include "mirror/nn/add.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {

std::unique_ptr<Layer> Add::create(const LayerArgs& args) { return std::make_unique<Add>(args.device); }

Shape Add::output_sample_shape_of(std::span<const Shape> inputs) const {
  check_input_count(inputs.size());
  for (std::size_t k = 1; k < inputs.size(); ++k)
    MIRROR_CHECK(inputs[k] == inputs[0], kInvalidArgument,
                 "add needs inputs of one shape, got " << to_string(inputs[0]) << " (input 1) and "
                                                       << to_string(inputs[k]) << " (input " << k + 1 << ")");
  return inputs[0];
}

const Tensor& Add::forward_inputs(std::span<const Tensor* const> xs) {
  std::vector<Shape> shapes;
  for (const Tensor* x : xs) shapes.push_back(x->shape());
  output_sample_shape_of(shapes);  // the same batch shapes, so the same sample shapes
  for (const Tensor* x : xs)
    MIRROR_CHECK(x->device() == device_ && !x->blocked(), kInvalidArgument,
                 "add on " << to_string(device_) << " takes plain tensors on its device, got one on "
                           << to_string(x->device()) << " in layout " << to_string(x->layout()));
  inputs_ = xs.size();
  y_.resize(xs[0]->shape());
  copy_device_to_device(device_, y_.data(), xs[0]->data(), static_cast<std::size_t>(y_.numel()) * sizeof(float));
  for (std::size_t k = 1; k < xs.size(); ++k) ops::axpy(device_, y_.numel(), 1.0f, xs[k]->data(), y_.data());
  return y_;
}

std::vector<const Tensor*> Add::backward_inputs(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) {
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               "add backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  return std::vector<const Tensor*>(inputs_, need_dx ? &dy : nullptr);
}

}  // namespace mirror::nn
