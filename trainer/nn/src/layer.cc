// layer.cc — mirror/nn/layer.h: the graph's several-input entry points for a layer of one input, which
// check that exactly one input came and hand it to the single-input forms.
#include "mirror/nn/layer.h"

#include "mirror/error.h"

namespace mirror::nn {

Shape Layer::output_sample_shape_of(std::span<const Shape> inputs) const {
  MIRROR_CHECK(inputs.size() == 1, kInvalidArgument,
               "a " << kind() << " layer takes one input, got " << inputs.size());
  return output_sample_shape(inputs[0]);
}

const Tensor& Layer::forward_inputs(std::span<const Tensor* const> xs) {
  MIRROR_CHECK(xs.size() == 1 && xs[0] != nullptr, kInvalidArgument,
               "a " << kind() << " layer takes one input, got " << xs.size());
  return forward(*xs[0]);
}

std::vector<const Tensor*> Layer::backward_inputs(const Tensor& dy, GradMode mode, bool need_dx,
                                                  const LayerGradReady& grad_ready) {
  return {backward(dy, mode, need_dx, grad_ready)};
}

}  // namespace mirror::nn
