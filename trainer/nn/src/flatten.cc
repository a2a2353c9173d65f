// flatten.cc — mirror/nn/flatten.h: views with another shape over the same memory.
#include "mirror/nn/flatten.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"

namespace mirror::nn {

std::unique_ptr<Layer> Flatten::create(const LayerArgs&) { return std::make_unique<Flatten>(); }

Shape Flatten::output_sample_shape(const Shape& input_sample_shape) const { return {shape_numel(input_sample_shape)}; }

const Tensor& Flatten::forward(const Tensor& x) {
  MIRROR_CHECK(!x.shape().empty() && x.dim(0) >= 1, kInvalidArgument, "flatten got a batch of shape " << to_string(x.shape()));
  input_shape_ = x.shape();
  y_ = Tensor::view(const_cast<void*>(x.raw_data()), {x.dim(0), x.numel() / x.dim(0)}, x.device(), x.dtype());
  return y_;
}

const Tensor* Flatten::backward(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) {
  MIRROR_CHECK(dy.numel() == shape_numel(input_shape_), kInvalidArgument,
               "flatten backward expects " << shape_numel(input_shape_) << " values, got " << to_string(dy.shape()));
  if (!need_dx) return nullptr;
  dx_ = Tensor::view(const_cast<void*>(dy.raw_data()), input_shape_, dy.device(), dy.dtype());
  return &dx_;
}

}  // namespace mirror::nn
