// mirror/nn/layer_norm.h — LayerNorm over the last axis of each sample (PyTorch's nn.LayerNorm(C), GPT-2's
// ln_1, ln_2, ln_f): per row of C values y = (x − mean) / sqrt(var + eps) · γ + β, var the biased variance.
// Parameters "weight" γ [C] (init 1) and "bias" β [C] (init 0), normalisation parameters (no weight decay).
// Statistics in double per row; γ's and β's gradients summed in double over the rows in order. CPU.
#pragma once

#include <memory>
#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

class LayerNorm final : public Layer {
 public:
  // kInvalidArgument for channels < 1, eps <= 0, or a device without its kernels (CUDA, for now).
  LayerNorm(std::int64_t channels, Device device, float eps = 1e-5f);
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "layernorm", "eps": 1e-5}

  std::string kind() const override { return "layernorm"; }
  // Any sample shape whose last axis has `channels` values; the same shape out.
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;

  const Tensor& forward(const Tensor& x) override;
  // Reports β (index 1), then γ (index 0), then computes dx.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  std::int64_t channels_;
  Device device_;
  float eps_;
  ParamBinding weight_, bias_;
  std::vector<float> mean_, rstd_;  // per row of the last forward
  Tensor xhat_, y_, dx_;
  Tensor row_stats_;  // CUDA: [2, rows], each row's mean then rstd (the CPU keeps mean_ and rstd_)
};

}  // namespace mirror::nn
