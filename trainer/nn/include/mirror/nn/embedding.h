// mirror/nn/embedding.h — Embedding: token ids (int32, [batch, T]) to vectors ([batch, T, C]) by rows of a weight
// W [vocab, C] (GPT-2's wte; initialised N(0, σ²), σ = "init_std", 0.02 by default). Backward adds each
// position's dy to its token's row, positions in order, so a run is repeatable; the ids take no gradient.
// An output head tied to it ({"type": "linear", "tied_to": ..., "bias": false}) uses the same W. CPU.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

class Embedding final : public Layer {
 public:
  // kInvalidArgument for a vocabulary or width < 1, or a device without its kernels (CUDA, for now).
  Embedding(std::int64_t vocab, std::int64_t channels, Device device, double init_std = 0.02);
  // {"type": "embedding", "vocab": V, "channels": C, "init_std": 0.02}
  static std::unique_ptr<Layer> create(const LayerArgs& args);

  std::string kind() const override { return "embedding"; }
  // [T] ids -> [T, C].
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  std::vector<ParamSpec> parameter_specs() const override { return {{"weight", {vocab_, channels_}}}; }
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;

  // x: int32 ids [batch, T], each in [0, vocab) (else kInvalidArgument naming the position and the id).
  const Tensor& forward(const Tensor& x) override;
  // Writes (or adds to) W's gradient, reports it (index 0); returns nullptr (ids take no gradient).
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  std::int64_t vocab_, channels_;
  double init_std_;
  Device device_;
  ParamBinding weight_;
  const Tensor* ids_ = nullptr;
  Tensor y_;
  // CUDA: the backward's plan, made in forward (embedding.cc): positions sorted by token, where each token's run
  // starts, and the distinct tokens, in one int32 device tensor.
  const Tensor& forward_cuda(const Tensor& x);
  void backward_cuda(const Tensor& dy, GradMode mode);
  Tensor backward_plan_;
  std::int64_t distinct_tokens_ = 0;
};

}  // namespace mirror::nn
