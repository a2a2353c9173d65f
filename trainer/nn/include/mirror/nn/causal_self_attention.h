// mirror/nn/causal_self_attention.h — CausalSelfAttention: GPT-2's attention block on sequences [T, C].
// One fused projection qkv = x·W_qkvᵀ + b_qkv ([T, 3C]: q, k, v in that order, as GPT-2's c_attn), per head
// softmax(q·kᵀ/√d, causal)·v with d = C / heads (a blocked online-softmax kernel that never stores T×T:
// attention_cpu.h), heads concatenated, then the output projection y = a·W_projᵀ + b_proj (c_proj).
// Parameters: qkv.weight [3C, C], qkv.bias [3C], proj.weight [C, C], proj.bias [C]; weights N(0, σ²) with
// σ = "init_std" (0.02) for qkv and "proj_init_std" (default σ; GPT-2 uses 0.02/√(2L)) for proj, biases 0.
// With a decode cache in the forward context (decode_cache.h) the layer keeps its keys and values there and
// attends over every cached position (attention_decode_cpu.h); such a forward has no backward. CPU.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"
#include "mirror/nn/linear.h"

namespace mirror::nn {

struct LayerArgs;

class CausalSelfAttention final : public Layer {
 public:
  // kInvalidArgument for channels not a multiple of heads, sizes < 1, or a device without its kernels.
  CausalSelfAttention(std::int64_t channels, std::int64_t heads, Device device, double init_std = 0.02,
                      double proj_init_std = 0.02);
  // {"type": "causal_self_attention", "heads": H, "init_std": 0.02, "proj_init_std": 0.02}; C from the input.
  static std::unique_ptr<Layer> create(const LayerArgs& args);

  std::string kind() const override { return "causal_self_attention"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;

  // x: [N, T, C] (positions [offset, offset + T) with a decode cache).
  const Tensor& forward(const Tensor& x) override;
  // Reports proj.bias (3), proj.weight (2), qkv.bias (1), qkv.weight (0), in that order. kInvalidArgument after a
  // forward with a decode cache.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  std::int64_t heads() const { return heads_; }

 private:
  // The attention of forward with a decode cache: the new keys and values into this layer's slot, then every
  // new position attends over the slot (the blocked kernel when the slot starts afresh).
  void attend_cached(const Tensor& qkv);
  void attend_cuda(const Tensor& qkv);                  // CUDA forward (causal_self_attention.cc)
  void attend_backward_cuda(const Tensor& d_attended);  // CUDA backward into d_qkv_

  std::int64_t channels_, heads_;
  Device device_;
  Linear qkv_, proj_;
  const Tensor* qkv_out_ = nullptr;  // qkv_'s output of the last forward (held by qkv_ until its next forward)
  Tensor attended_, lse_, d_attended_, d_qkv_;
  bool cached_forward_ = false;  // the last forward used a decode cache (no backward)
  // With bfloat16 compute (precision.h): qkv rounded for the attention products, kept for backward. A forward
  // with a decode cache (generation) attends in float32.
  Tensor qkv16_;
  bool bf16_forward_ = false;
  Tensor probs_, dprobs_;  // CUDA: each head's T×T probabilities from forward, and backward's scratch
  Tensor probs16_, dprobs16_, d_attended16_;  // CUDA with bfloat16 compute: the rounded operands
};

}  // namespace mirror::nn
