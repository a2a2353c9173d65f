// embedding.cc — mirror/nn/embedding.h: row copies forward, row sums backward (positions in order), on the CPU
// or with lm_kernels_cuda.h's kernels on CUDA.
#include "mirror/nn/embedding.h"

#include <cmath>
#include <cstring>

#include "init.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"
#if MIRROR_HAVE_CUDA
#include "cuda/lm_kernels_cuda.h"
#endif

namespace mirror::nn {

Embedding::Embedding(std::int64_t vocab, std::int64_t channels, Device device, double init_std)
    : vocab_(vocab), channels_(channels), init_std_(init_std), device_(device), y_({0}, device),
      backward_plan_({0}, device, DType::kInt32) {
  MIRROR_CHECK(vocab >= 1 && channels >= 1, kInvalidArgument,
               "embedding needs vocab >= 1 and channels >= 1, got vocab=" << vocab << " channels=" << channels);
  MIRROR_CHECK(init_std > 0.0, kInvalidArgument, "embedding: \"init_std\" must be > 0, got " << init_std);
}

std::unique_ptr<Layer> Embedding::create(const LayerArgs& args) {
  const std::int64_t vocab = args.settings.text("vocab") == "classes" ? args.classes
                                                                      : args.settings.required_integer("vocab", 1);
  return std::make_unique<Embedding>(vocab, args.settings.required_integer("channels", 1), args.device,
                                     args.settings.number("init_std", 0.02));
}

Shape Embedding::output_sample_shape(const Shape& input_sample_shape) const {
  MIRROR_CHECK(input_sample_shape.size() == 1, kInvalidArgument,
               "embedding takes samples of token ids [T], got " << to_string(input_sample_shape));
  return {input_sample_shape[0], channels_};
}

void Embedding::bind_parameters(std::span<const ParamBinding> bindings) {
  MIRROR_CHECK(bindings.size() == 1, kInternal, "embedding binds 1 parameter, got " << bindings.size());
  weight_ = bindings[0];
}

void Embedding::init_parameter(std::size_t, std::span<float> values, std::uint64_t seed) const {
  detail::fill_normal(values, init_std_, seed);
}

const Tensor& Embedding::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr, kInternal, "embedding used before its parameters were bound");
  MIRROR_CHECK(x.shape().size() == 2 && x.dim(0) > 0, kInvalidArgument,
               "embedding needs a batch of ids [N, T], got " << to_string(x.shape()));
  const std::int64_t positions = x.numel();
  if (device_.is_cuda()) return forward_cuda(x);
  const std::int32_t* ids = x.as<std::int32_t>();
  for (std::int64_t p = 0; p < positions; ++p)
    MIRROR_CHECK(ids[p] >= 0 && ids[p] < vocab_, kInvalidArgument,
                 "embedding: token id " << ids[p] << " at position " << p % x.dim(1) << " of sample " << p / x.dim(1)
                                        << " is outside [0, " << vocab_ << ")");
  ids_ = &x;
  y_.resize({x.dim(0), x.dim(1), channels_});
  float* out = y_.data();
  for (std::int64_t p = 0; p < positions; ++p)
    std::memcpy(out + p * channels_, weight_.value + ids[p] * channels_, static_cast<std::size_t>(channels_) * sizeof(float));
  return y_;
}

const Tensor* Embedding::backward(const Tensor& dy, GradMode mode, bool, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(ids_ != nullptr && dy.numel() == ids_->numel() * channels_, kInvalidArgument,
               "embedding backward expects dy of " << (ids_ ? ids_->numel() : 0) << " x " << channels_ << " values, got "
                                                   << to_string(dy.shape()));
  if (device_.is_cuda()) {
    backward_cuda(dy, mode);
    if (grad_ready) grad_ready(0);
    return nullptr;
  }
  if (mode == GradMode::kOverwrite) std::memset(weight_.grad, 0, static_cast<std::size_t>(vocab_ * channels_) * sizeof(float));
  const std::int32_t* ids = ids_->as<std::int32_t>();
  const float* g = dy.data();
  for (std::int64_t p = 0; p < ids_->numel(); ++p) {
    float* row = weight_.grad + ids[p] * channels_;
    for (std::int64_t j = 0; j < channels_; ++j) row[j] += g[p * channels_ + j];
  }
  if (grad_ready) grad_ready(0);
  return nullptr;
}

// CUDA: the ids come to the host once per forward, to be checked with the same error as on the CPU and sorted by
// token (a stable counting sort) for a backward without atomics (lm_kernels_cuda.h): each token's gradient row is
// the sum of its positions' dy rows in position order, as on the CPU, so a run repeats bit for bit.
const Tensor& Embedding::forward_cuda(const Tensor& x) {
  const std::vector<std::int32_t> ids = x.to_host_int32();
  for (std::size_t p = 0; p < ids.size(); ++p)
    MIRROR_CHECK(ids[p] >= 0 && ids[p] < vocab_, kInvalidArgument,
                 "embedding: token id " << ids[p] << " at position " << static_cast<std::int64_t>(p) % x.dim(1)
                                        << " of sample " << static_cast<std::int64_t>(p) / x.dim(1) << " is outside [0, "
                                        << vocab_ << ")");
  ids_ = &x;
  std::vector<std::int32_t> count(static_cast<std::size_t>(vocab_) + 1, 0);
  for (std::int32_t id : ids) ++count[static_cast<std::size_t>(id) + 1];
  std::vector<std::int32_t> tokens, starts{0}, next(static_cast<std::size_t>(vocab_));
  for (std::int64_t t = 0; t < vocab_; ++t) {
    next[t] = count[t];
    count[t + 1] += count[t];
    if (count[t + 1] > count[t]) {
      tokens.push_back(static_cast<std::int32_t>(t));
      starts.push_back(count[t + 1]);
    }
  }
  std::vector<std::int32_t> order(ids.size());
  for (std::size_t p = 0; p < ids.size(); ++p) order[next[ids[p]]++] = static_cast<std::int32_t>(p);
  std::vector<std::int32_t> plan(order);  // one upload: order, starts, tokens
  plan.insert(plan.end(), starts.begin(), starts.end());
  plan.insert(plan.end(), tokens.begin(), tokens.end());
  backward_plan_.resize({static_cast<std::int64_t>(plan.size())});
  backward_plan_.copy_from_host(std::span<const std::int32_t>(plan));
  distinct_tokens_ = static_cast<std::int64_t>(tokens.size());
  y_.resize({x.dim(0), x.dim(1), channels_});
#if MIRROR_HAVE_CUDA
  detail::cuda::embedding_forward(x.as<std::int32_t>(), weight_.value, x.numel(), channels_, y_.data());
#endif
  return y_;
}

void Embedding::backward_cuda(const Tensor& dy, GradMode mode) {
  if (mode == GradMode::kOverwrite) ops::fill(device_, weight_.grad, vocab_ * channels_, 0.0f);
#if MIRROR_HAVE_CUDA
  const std::int32_t* order = backward_plan_.as<std::int32_t>();
  const std::int64_t positions = ids_->numel();
  detail::cuda::embedding_backward(dy.data(), order, order + positions, order + positions + distinct_tokens_ + 1,
                                   distinct_tokens_, channels_, /*accumulate=*/true, weight_.grad);
#else
  (void)dy;
#endif
}

}  // namespace mirror::nn
