// mirror/nn/batch_norm2d.h — batch normalisation over the channels of NCHW batches, with PyTorch's
// conventions (nn.BatchNorm2d / SyncBatchNorm): in training each channel is normalised with the batch mean and
// the biased batch variance, y = γ (x − μ) / sqrt(σ² + eps) + β, and the running statistics move by momentum
// with the unbiased variance: rm = (1 − m) rm + m μ, rv = (1 − m) rv + m σ² M / (M − 1), M = values per channel;
// in evaluation the running statistics normalise. Synchronised when the forward context carries a
// ReplicaReducer: the batch statistics (forward: every replica's count, mean and M2, gathered and combined)
// and the two sums the input gradient needs (backward: summed) are taken over all replicas, so every replica normalises with the statistics of the global batch and N replicas
// × B samples compute what 1 replica × N·B does. γ and β gradients stay sums over the local batch (the trainer's
// gradient average over replicas makes them the global ones). How the statistics are summed: batch_norm2d.cc.
#pragma once

#include <memory>
#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;  // mirror/nn/layer_registry.h

namespace detail {
class BatchNormKernels;  // the device's bulk loops (src/batch_norm2d_kernels.h)
struct NormalisationHandOver;  // src/bn_hand_over.h
struct PooledGradient;
struct BnBatch;  // src/batch_norm2d_kernels.h
struct BnChannelMean {
  std::vector<float> hi, lo;  // mean = hi + lo per channel
};
}  // namespace detail

class BatchNorm2d final : public Layer {
 public:
  // Throws kInvalidArgument for channels <= 0, momentum outside [0, 1], eps <= 0, or a CUDA device in a
  // CPU-only build.
  BatchNorm2d(std::int64_t channels, Device device, float momentum = 0.1f, float eps = 1e-5f);
  ~BatchNorm2d() override;

  std::string kind() const override { return relu_after_ ? "batchnorm2d+relu" : "batchnorm2d"; }
  // The factory of the layer table (layer_table.cc): settings from a model description (docs/model-format.md).
  static std::unique_ptr<Layer> create(const LayerArgs& args);
  // [C, H, W] -> the same; kInvalidArgument for another channel count or rank.
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  // {"weight", [C]} (γ, init 1), {"bias", [C]} (β, init 0).
  std::vector<ParamSpec> parameter_specs() const override;
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;
  // {"running_mean", [C], 0}, {"running_var", [C], 1}.
  std::vector<BufferSpec> buffer_specs() const override;
  void bind_buffers(std::span<float* const> buffers) override;

  // x: [N, C, H, W]. Training: batch statistics (kInvalidArgument when a channel has a single value over the
  // whole, possibly global, batch: its variance is undefined), running statistics updated. Evaluation:
  // running statistics, nothing updated.
  // Blocked inputs on the CPU (y and dx in x's layout).
  // On the CPU: a ReLU after this layer runs inside its loops (y = relu(normalised), dy · [y > 0] in backward).
  // The fusion pass (chain_fusion.h) found a ReLU right after: returns true when this layer now applies it to
  // its own output (y = relu(...), dy · [y > 0]: the ReLU's values without its passes; CPU). Called once.
  bool absorb_following_relu();
  // The layer that consumes this one's output takes over its normalisation (src/bn_hand_over.h: a 2×2 max pooling
  // right after it, chain_fusion.h; the add of the residual block whose body it ends): from then on a blocked
  // forward computes the statistics only and returns x itself, the consumer normalising as it reads, and after a
  // pooling backward reads its gradient and winners instead of dy. False (nothing changes) on CUDA or when this
  // layer applies a ReLU itself. Called once, before the first forward.
  bool hand_normalisation_over(std::shared_ptr<detail::NormalisationHandOver> to);
  const Tensor& forward(const Tensor& x) override;
  // Reports β (index 1) and γ (index 0), then computes dx when need_dx (synchronised: one reducer->sum of 2·C
  // values, after the two reports). Forward, synchronised: one reducer->gather of 3·C + 2 values.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  std::int64_t channels() const { return channels_; }
  float momentum() const { return momentum_; }
  float eps() const { return eps_; }

 private:
  ReplicaReducer* reducer() const;                          // the forward context's, or null
  void reduce(std::vector<double>& values);  // sums values over the replicas
  // Replaces this replica's (mean, M2, count) by the global batch's, from every replica's (one gather).
  void combine_over_replicas(std::vector<double>& mean, std::vector<double>& m2, double& count);
  void batch_statistics(const Tensor& x);  // sets the statistics, count_; updates the running statistics
  void running_statistics();               // sets the statistics from the running statistics
  void set_statistics(const std::vector<double>& mean, const std::vector<double>& var);
  // Backward's parts: the batch as the loops see it; the pooling's handed-back gradient (null unless the last
  // forward handed its normalisation to a pooling); γ's and β's gradients written (or added) and reported; the
  // two mean terms of dx from the sums (summed over the replicas first when synchronised).
  detail::BnBatch backward_batch(const Tensor& dy) const;
  const detail::PooledGradient* pooled_gradient(const Tensor& dy) const;
  void write_parameter_gradients(const std::vector<double>& sdy, const std::vector<double>& sdyx, GradMode mode,
                                 const LayerGradReady& grad_ready);
  void mean_terms(std::vector<double>& sdy, std::vector<double>& sdyx, std::vector<float>& mean_dy,
                  std::vector<float>& mean_dyx);

  std::int64_t channels_;
  Device device_;
  float momentum_, eps_;
  std::unique_ptr<detail::BatchNormKernels> kernels_;
  ParamBinding weight_, bias_;
  float* running_mean_ = nullptr;
  float* running_var_ = nullptr;
  const Tensor* x_ = nullptr;  // input of the last forward
  bool batch_stats_ = false;   // the last forward normalised with batch statistics
  bool relu_after_ = false;    // absorb_following_relu: y_ = relu(normalised x)
  std::shared_ptr<detail::NormalisationHandOver> hand_over_;  // hand_normalisation_over
  bool handed_over_ = false;  // the last forward left its normalisation to the consumer (y_ unwritten)
  double count_ = 0;           // values per channel behind the statistics (global when synchronised)
  detail::BnChannelMean mean_;  // of the last forward, as hi + lo floats
  std::vector<float> inv_std_, gamma_;
  std::vector<float> scale_, shift_;  // of the last forward: y = ((x − hi) − lo) · scale + shift
  Tensor y_, dx_, sums_, gathered_;  // sums_: what goes to the reducer, gathered_: what the gather returns
};

}  // namespace mirror::nn
