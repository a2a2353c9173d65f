// activation.cc — mirror/nn/activation.h: ReLU forward/backward through ops (no parameters).
#include "mirror/nn/activation.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {

std::unique_ptr<Layer> ReLU::create(const LayerArgs& args) { return std::make_unique<ReLU>(args.device); }

const Tensor& ReLU::forward(const Tensor& x) {
  y_.resize(x.shape());
  y_.set_layout(x.layout());
  ops::relu_forward(device_, x.data(), y_.data(), x.numel());
  return y_;
}

const Tensor* ReLU::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(dy.numel() == y_.numel(), kInvalidArgument,
               "relu backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  MIRROR_CHECK(dy.layout() == y_.layout(), kInternal,
               "relu backward expects dy in layout " << to_string(y_.layout()) << ", got " << to_string(dy.layout()));
  if (!need_dx) return nullptr;
  dx_.resize(y_.shape());
  dx_.set_layout(y_.layout());
  ops::relu_backward(device_, y_.data(), dy.data(), dx_.data(), dy.numel());
  return &dx_;
}

}  // namespace mirror::nn
