// mirror/nn/batch_norm_max_pool.h — BatchNormMaxPool, the fused layer the fusion pass (chain_fusion.h) puts in
// place of batchnorm2d → [relu] → maxpool2d 2×2 stride 2 on the CPU: the pooling normalises each window's values
// as it reads them (and applies the ReLU to its output), so the normalised tensor is never written, and its
// backward hands the BatchNorm its output gradient and winners instead of a full-size dx (src/bn_hand_over.h).
// The two layers are this layer's own; what passes between them stays inside it. Its parameters and buffers are
// the BatchNorm's ("weight", "bias", "running_mean", "running_var"), so a fused node keeps the BatchNorm's name.
#pragma once

#include <memory>

#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/pool2d.h"

namespace mirror::nn {

class BatchNormMaxPool final : public Layer {
 public:
  // Only for what can_fuse() accepts (else kInternal). relu: a ReLU stood between them.
  BatchNormMaxPool(std::unique_ptr<BatchNorm2d> bn, bool relu, std::unique_ptr<Pool2d> pool);
  // A 2×2 stride-2 max pooling after a BatchNorm2d, both on the CPU.
  static bool can_fuse(const BatchNorm2d& bn, const Pool2d& pool);

  std::string kind() const override { return relu_ ? "batchnorm2d+relu+maxpool2d" : "batchnorm2d+maxpool2d"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  std::vector<ParamSpec> parameter_specs() const override { return bn_->parameter_specs(); }
  void bind_parameters(std::span<const ParamBinding> bindings) override { bn_->bind_parameters(bindings); }
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override {
    bn_->init_parameter(local_index, values, seed);
  }
  std::vector<BufferSpec> buffer_specs() const override { return bn_->buffer_specs(); }
  void bind_buffers(std::span<float* const> buffers) override { bn_->bind_buffers(buffers); }

  const Tensor& forward(const Tensor& x) override;
  // The pooling's backward, then the BatchNorm's (its parameters' gradients reported, dx written).
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  // The parts (tests).
  const BatchNorm2d& batch_norm() const { return *bn_; }
  const Pool2d& pool() const { return *pool_; }

 private:
  std::unique_ptr<BatchNorm2d> bn_;
  std::unique_ptr<Pool2d> pool_;
  bool relu_;
};

}  // namespace mirror::nn
