// causal_self_attention.cc — mirror/nn/causal_self_attention.h: two per-position Linear layers around the
// attention kernel (attention_cpu.h; its bfloat16 form with bfloat16 compute; on CUDA attention_cuda.h); the layer
// maps its four parameters onto them.
#include "mirror/nn/causal_self_attention.h"

#include "attention_cpu.h"
#include "attention_decode_cpu.h"
#include "mirror/error.h"
#include "mirror/nn/decode_cache.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/precision.h"
#if MIRROR_HAVE_CUDA
#include "cuda/attention_cuda.h"
#include "mirror/nn/half_cast.h"
#endif

namespace mirror::nn {
namespace {

// A bfloat16 tensor's elements as their 16 bits (the CUDA kernels' type).
[[maybe_unused]] std::uint16_t* bits(Tensor& t) { return reinterpret_cast<std::uint16_t*>(t.as<BFloat16>()); }

std::int64_t checked_channels(std::int64_t channels, std::int64_t heads) {
  MIRROR_CHECK(channels >= 1 && heads >= 1 && channels % heads == 0, kInvalidArgument,
               "causal_self_attention needs channels divisible by heads, got channels=" << channels
                                                                                          << " heads=" << heads);
  return channels;
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(std::int64_t channels, std::int64_t heads, Device device, double init_std,
                                         double proj_init_std)
    : channels_(checked_channels(channels, heads)), heads_(heads), device_(device),
      qkv_(channels, 3 * channels, device, true, true), proj_(channels, channels, device, true, true),
      attended_({0}, device), lse_({0}, device), d_attended_({0}, device), d_qkv_({0}, device),
      qkv16_({0}, device, DType::kBFloat16), probs_({0}, device), dprobs_({0}, device),
      probs16_({0}, device, DType::kBFloat16), dprobs16_({0}, device, DType::kBFloat16),
      d_attended16_({0}, device, DType::kBFloat16) {
  MIRROR_CHECK(init_std > 0.0 && proj_init_std > 0.0, kInvalidArgument,
               "causal_self_attention: \"init_std\" and \"proj_init_std\" must be > 0, got " << init_std << " and "
                                                                                            << proj_init_std);
  qkv_.set_init_std(init_std);
  proj_.set_init_std(proj_init_std);
}

std::unique_ptr<Layer> CausalSelfAttention::create(const LayerArgs& args) {
  MIRROR_CHECK(args.input.size() == 2, kInvalidArgument,
               "causal_self_attention takes sequences [T, C], got samples of shape " << to_string(args.input));
  const double init_std = args.settings.number("init_std", 0.02);
  return std::make_unique<CausalSelfAttention>(args.input.back(), args.settings.required_integer("heads", 1),
                                               args.device, init_std,
                                               args.settings.number("proj_init_std", init_std));
}

Shape CausalSelfAttention::output_sample_shape(const Shape& input_sample_shape) const {
  MIRROR_CHECK(input_sample_shape.size() == 2 && input_sample_shape[1] == channels_, kInvalidArgument,
               "causal_self_attention of " << channels_ << " channels takes sequences [T, " << channels_ << "], got "
                                           << to_string(input_sample_shape));
  return input_sample_shape;
}

std::vector<ParamSpec> CausalSelfAttention::parameter_specs() const {
  return {{"qkv.weight", {3 * channels_, channels_}},
          {"qkv.bias", {3 * channels_}},
          {"proj.weight", {channels_, channels_}},
          {"proj.bias", {channels_}}};
}

void CausalSelfAttention::bind_parameters(std::span<const ParamBinding> bindings) {
  MIRROR_CHECK(bindings.size() == 4, kInternal, "causal_self_attention binds 4 parameters, got " << bindings.size());
  qkv_.bind_parameters(bindings.subspan(0, 2));
  proj_.bind_parameters(bindings.subspan(2, 2));
}

void CausalSelfAttention::init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const {
  if (local_index < 2) qkv_.init_parameter(local_index, values, seed);
  else proj_.init_parameter(local_index - 2, values, seed);
}

const Tensor& CausalSelfAttention::forward(const Tensor& x) {
  MIRROR_CHECK(x.shape().size() == 3 && x.dim(0) > 0 && x.dim(2) == channels_, kInvalidArgument,
               "causal_self_attention of " << channels_ << " channels got a batch of shape " << to_string(x.shape()));
  const bool cached = context_ != nullptr && context_->cache != nullptr;
  MIRROR_CHECK(cached || context_ == nullptr || context_->position_offset == 0, kInvalidArgument,
               "causal_self_attention: a forward from position " << context_->position_offset
                                                                   << " needs a decode cache (decode_cache.h)");
  const Tensor& qkv = qkv_.forward(x);
  qkv_out_ = &qkv;
  cached_forward_ = cached;
  attended_.resize(x.shape());
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    bf16_forward_ = !cached && computes_bf16();
    if (cached)
      attend_cached(qkv);
    else
      attend_cuda(qkv);
    return proj_.forward(attended_);
  }
#endif
  lse_.resize({x.dim(0), heads_, x.dim(1)});
  bf16_forward_ = !cached && computes_bf16();
  const detail::AttentionShape shape{x.dim(0), x.dim(1), channels_, heads_};
  if (cached) {
    attend_cached(qkv);
  } else if (bf16_forward_) {
    qkv16_.resize(qkv.shape());
    round_to_bfloat16(qkv.data(), qkv16_.as<BFloat16>(), qkv.numel());
    detail::causal_attention_forward_bf16(shape, qkv16_.as<BFloat16>(), attended_.data(), lse_.data());
  } else {
    detail::causal_attention_forward(shape, qkv.data(), attended_.data(), lse_.data());
  }
  return proj_.forward(attended_);
}

void CausalSelfAttention::attend_cached(const Tensor& qkv) {
  const std::int64_t n = qkv.dim(0), t = qkv.dim(1), offset = context_->position_offset;
  DecodeCache::Slot& slot = context_->cache->extend(this, n, channels_, offset, t);
  MIRROR_CHECK(slot.keys.device() == device_, kInvalidArgument,
               "causal_self_attention on " << to_string(device_) << " got a decode cache on "
                                           << to_string(slot.keys.device()) << " (DecodeCache's device)");
  const detail::DecodeAttentionShape s{n, t, offset, context_->cache->capacity(), channels_, heads_};
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {  // every forward through the cached kernel, the first (offset 0) too
    detail::cuda::append_keys_values(qkv.data(), n, t, offset, s.capacity, channels_, slot.keys.data(),
                                     slot.values.data());
    detail::cuda::cached_attention_forward({n, t, channels_, heads_}, offset, s.capacity, qkv.data(), slot.keys.data(),
                                           slot.values.data(), attended_.data());
    return;
  }
#endif
  detail::append_keys_values(s, qkv.data(), slot.keys.data(), slot.values.data());
  if (offset == 0)  // nothing cached before: the new positions attend among themselves, as without a cache
    detail::causal_attention_forward({n, t, channels_, heads_}, qkv.data(), attended_.data(), lse_.data());
  else
    detail::cached_attention_forward(s, qkv.data(), slot.keys.data(), slot.values.data(), attended_.data());
}

const Tensor* CausalSelfAttention::backward(const Tensor& dy, GradMode mode, bool need_dx,
                                            const LayerGradReady& grad_ready) {
  MIRROR_CHECK(!cached_forward_, kInvalidArgument,
               "causal_self_attention: no backward after a forward with a decode cache (generation only)");
  const LayerGradReady proj_ready = [&grad_ready](std::size_t local) {
    if (grad_ready) grad_ready(local + 2);
  };
  const Tensor* d_attended = proj_.backward(dy, mode, true, proj_ready);
  const Shape& shape = attended_.shape();
  d_qkv_.resize({shape[0], shape[1], 3 * channels_});
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    attend_backward_cuda(*d_attended);
    return qkv_.backward(d_qkv_, mode, need_dx, grad_ready);
  }
#endif
  const detail::AttentionShape s{shape[0], shape[1], channels_, heads_};
  if (bf16_forward_)
    detail::causal_attention_backward_bf16(s, qkv16_.as<BFloat16>(), attended_.data(), lse_.data(), d_attended->data(),
                                           d_qkv_.data());
  else
    detail::causal_attention_backward(s, qkv_out_->data(), attended_.data(), lse_.data(), d_attended->data(),
                                      d_qkv_.data());
  return qkv_.backward(d_qkv_, mode, need_dx, grad_ready);
}

#if MIRROR_HAVE_CUDA
// CUDA (attention_cuda.h): whole T×T probabilities per head, in float32 or with bfloat16 operands.
void CausalSelfAttention::attend_cuda(const Tensor& qkv) {
  const std::int64_t n = qkv.dim(0), t = qkv.dim(1);
  probs_.resize({n, heads_, t, t});
  const detail::cuda::AttentionDims dims{n, t, channels_, heads_};
  if (!bf16_forward_) {
    detail::cuda::causal_attention_forward(dims, qkv.data(), probs_.data(), attended_.data());
    return;
  }
  qkv16_.resize(qkv.shape());
  probs16_.resize(probs_.shape());
  narrow_to_16bit(device_, qkv.data(), bits(qkv16_), static_cast<std::size_t>(qkv.numel()), false, 1.0f);
  detail::cuda::causal_attention_forward_bf16(dims, bits(qkv16_), probs_.data(), bits(probs16_), attended_.data());
}

void CausalSelfAttention::attend_backward_cuda(const Tensor& d_attended) {
  const Shape& shape = attended_.shape();
  const detail::cuda::AttentionDims dims{shape[0], shape[1], channels_, heads_};
  dprobs_.resize(probs_.shape());
  if (!bf16_forward_) {
    detail::cuda::causal_attention_backward(dims, qkv_out_->data(), probs_.data(), d_attended.data(), dprobs_.data(),
                                            d_qkv_.data());
    return;
  }
  d_attended16_.resize(shape);
  dprobs16_.resize(probs_.shape());
  detail::cuda::causal_attention_backward_bf16(dims, bits(qkv16_), probs_.data(), bits(probs16_), d_attended.data(),
                                               bits(d_attended16_), dprobs_.data(), bits(dprobs16_), d_qkv_.data());
}
#endif

}  // namespace mirror::nn
