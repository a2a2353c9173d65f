// forwarding_layer.h — a test layer that forwards every call to an inner layer (parameters, buffers, layouts,
// training mode and forward context), so a test can wrap a layer to hide it from a chain's fusions
// (chain_fusion.h looks for the concrete types) or to watch or restrict what reaches it; overriding one method
// changes one thing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn::testing {

class ForwardingLayer : public Layer {
 public:
  explicit ForwardingLayer(std::unique_ptr<Layer> inner) : inner_(std::move(inner)) {
    accepts_blocked_ = inner_->accepts_blocked();
  }
  std::string kind() const override { return inner_->kind(); }
  Shape output_sample_shape(const Shape& s) const override { return inner_->output_sample_shape(s); }
  std::vector<ParamSpec> parameter_specs() const override { return inner_->parameter_specs(); }
  void bind_parameters(std::span<const ParamBinding> b) override { inner_->bind_parameters(b); }
  void init_parameter(std::size_t i, std::span<float> v, std::uint64_t seed) const override {
    inner_->init_parameter(i, v, seed);
  }
  std::vector<BufferSpec> buffer_specs() const override { return inner_->buffer_specs(); }
  void bind_buffers(std::span<float* const> b) override { inner_->bind_buffers(b); }
  const Tensor& forward(const Tensor& x) override {
    inner_->set_training(training());
    inner_->set_forward_context(context_);
    inner_->set_blocked_output(blocked_output_);
    return inner_->forward(x);
  }
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& ready) override {
    return inner_->backward(dy, mode, need_dx, ready);
  }

 protected:
  Layer& inner() { return *inner_; }

 private:
  std::unique_ptr<Layer> inner_;
};

}  // namespace mirror::nn::testing
