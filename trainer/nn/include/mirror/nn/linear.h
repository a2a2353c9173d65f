// mirror/nn/linear.h — fully connected layer y = x · Wᵀ + b, W stored [out, in] row-major (PyTorch's
// layout), b [out] (optional). Inputs [batch, ...] are read as [batch, in] with in = product of the sample
// dimensions, so a [C, H, W] sample is taken in C, H, W order, as PyTorch's Flatten + Linear do; a [T, C]
// sample (a sequence) is taken per position instead: [batch, T, in] → [batch, T, out], as nn.Linear on the last
// axis.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;
namespace detail {
class CpuLinearForward;  // src/linear_cpu_matmul.h
class LinearBf16;        // src/linear_bf16.h
}

class Linear final : public Layer {
 public:
  // per_position: samples are [T, in_features] and each position is mapped (else a sample is flattened).
  Linear(std::int64_t in_features, std::int64_t out_features, Device device, bool bias = true,
         bool per_position = false);
  ~Linear() override;
  // {"type": "linear", "out_features": N or "classes", "bias": true, "init_std": σ}; in_features from the input
  // shape (its last axis for a [T, C] sample, per position).
  static std::unique_ptr<Layer> create(const LayerArgs& args);

  std::string kind() const override { return "linear"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  // {"weight", [out, in]}, {"bias", [out]} (without bias: the weight only).
  std::vector<ParamSpec> parameter_specs() const override;
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  // Weight: Kaiming (He) uniform for ReLU, U(-b, b) with b = sqrt(6 / in), or N(0, σ²) when an init_std σ > 0
  // is set (GPT-2's initialisation); bias: zeros.
  void set_init_std(double std) { init_std_ = std; }
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;

  const Tensor& forward(const Tensor& x) override;
  // Order: bias gradient (reported as index 1, when there is a bias), weight gradient (index 0), then dx.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

 private:
  // Rows of the [rows, in] product for a batch x (samples, or samples × positions).
  std::int64_t rows_of(const Tensor& x) const;

  std::int64_t in_, out_;
  bool has_bias_;
  bool per_position_;
  double init_std_ = 0.0;  // 0: Kaiming uniform
  Device device_;
  ParamBinding weight_, bias_;
  const Tensor* x_ = nullptr;  // input of the last forward
  Tensor y_, dx_;
  std::unique_ptr<detail::CpuLinearForward> cpu_forward_;  // the CPU's forward product, where it is a matmul
  std::unique_ptr<detail::LinearBf16> bf16_;               // the bfloat16 products (precision.h), made on use
  bool bf16_forward_ = false;                              // the last forward computed in bfloat16
};

}  // namespace mirror::nn
