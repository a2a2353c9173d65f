// mirror/nn/position_embedding.h — PositionEmbedding: learned positions added to a sequence (GPT-2's wpe).
// y[n, t, :] = x[n, t, :] + W[t, :] for samples [T, C] with T <= context; W [context, C] initialised N(0, σ²),
// σ = "init_std" (0.02). The model's context is W's row count: a model trained on shorter windows (--context)
// keeps it. Backward: dx = dy, dW[t] = Σ_n dy[n, t] (samples in order, so a run is repeatable). A forward
// context's position_offset p (incremental decoding: decode_cache.h) shifts the rows: y[n, t] = x[n, t] + W[p + t],
// refused when p + T passes the context. CPU.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

class PositionEmbedding final : public Layer {
 public:
  // kInvalidArgument for context or channels < 1, init_std <= 0, or a device without its kernels (CUDA, for now).
  PositionEmbedding(std::int64_t context, std::int64_t channels, Device device, double init_std = 0.02);
  // {"type": "position_embedding", "context": T, "init_std": 0.02}; channels from the input's last axis.
  static std::unique_ptr<Layer> create(const LayerArgs& args);

  std::string kind() const override { return "position_embedding"; }
  // [T, C] -> [T, C]; T above the context is refused, naming both.
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  std::vector<ParamSpec> parameter_specs() const override { return {{"weight", {context_, channels_}}}; }
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;

  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  std::int64_t context() const { return context_; }

 private:
  std::int64_t context_, channels_;
  double init_std_;
  Device device_;
  ParamBinding weight_;
  Shape x_shape_;
  std::int64_t offset_ = 0;  // the first row of the last forward
  Tensor y_;
};

}  // namespace mirror::nn
