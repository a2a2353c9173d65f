// position_embedding.cc — mirror/nn/position_embedding.h: row adds forward, per-position sums over the batch
// backward.
#include "mirror/nn/position_embedding.h"

#include <cstring>

#include "init.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"
#if MIRROR_HAVE_CUDA
#include "cuda/lm_kernels_cuda.h"
#endif

namespace mirror::nn {

PositionEmbedding::PositionEmbedding(std::int64_t context, std::int64_t channels, Device device, double init_std)
    : context_(context), channels_(channels), init_std_(init_std), device_(device), y_({0}, device) {
  MIRROR_CHECK(context >= 1 && channels >= 1, kInvalidArgument,
               "position_embedding needs context >= 1 and channels >= 1, got context=" << context
                                                                                        << " channels=" << channels);
  MIRROR_CHECK(init_std > 0.0, kInvalidArgument, "position_embedding: \"init_std\" must be > 0, got " << init_std);
}

std::unique_ptr<Layer> PositionEmbedding::create(const LayerArgs& args) {
  MIRROR_CHECK(args.input.size() == 2, kInvalidArgument,
               "position_embedding takes sequences [T, C], got samples of shape " << to_string(args.input));
  return std::make_unique<PositionEmbedding>(args.settings.required_integer("context", 1), args.input.back(),
                                             args.device, args.settings.number("init_std", 0.02));
}

Shape PositionEmbedding::output_sample_shape(const Shape& input_sample_shape) const {
  MIRROR_CHECK(input_sample_shape.size() == 2 && input_sample_shape[1] == channels_, kInvalidArgument,
               "position_embedding of " << channels_ << " channels takes sequences [T, " << channels_ << "], got "
                                        << to_string(input_sample_shape));
  MIRROR_CHECK(input_sample_shape[0] <= context_, kInvalidArgument,
               "a sequence of " << input_sample_shape[0] << " positions is longer than the model's context of "
                                << context_ << " (position_embedding)");
  return input_sample_shape;
}

void PositionEmbedding::bind_parameters(std::span<const ParamBinding> bindings) {
  MIRROR_CHECK(bindings.size() == 1, kInternal, "position_embedding binds 1 parameter, got " << bindings.size());
  weight_ = bindings[0];
}

void PositionEmbedding::init_parameter(std::size_t, std::span<float> values, std::uint64_t seed) const {
  detail::fill_normal(values, init_std_, seed);
}

const Tensor& PositionEmbedding::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr, kInternal, "position_embedding used before its parameters were bound");
  MIRROR_CHECK(x.shape().size() == 3 && x.dim(0) > 0 && x.dim(2) == channels_ && x.dim(1) <= context_,
               kInvalidArgument,
               "position_embedding (context " << context_ << ", " << channels_ << " channels) got a batch of shape "
                                              << to_string(x.shape()));
  const ForwardContext* forward_context = Layer::context_;  // (context_ here is the position count)
  offset_ = forward_context != nullptr ? forward_context->position_offset : 0;
  MIRROR_CHECK(offset_ >= 0 && offset_ + x.dim(1) <= context_, kInvalidArgument,
               "positions [" << offset_ << ", " << offset_ + x.dim(1) << ") are past the model's context of "
                             << context_ << " positions (position_embedding)");
  x_shape_ = x.shape();
  y_.resize(x.shape());
  const std::int64_t row = x.dim(1) * channels_;
  const float* in = x.data();
  const float* w = weight_.value + offset_ * channels_;
  float* out = y_.data();
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    detail::cuda::position_embedding_forward(in, w, x.dim(0), x.dim(1), channels_, out);
    return y_;
  }
#endif
  for (std::int64_t n = 0; n < x.dim(0); ++n)
    for (std::int64_t i = 0; i < row; ++i) out[n * row + i] = in[n * row + i] + w[i];
  return y_;
}

const Tensor* PositionEmbedding::backward(const Tensor& dy, GradMode mode, bool need_dx,
                                          const LayerGradReady& grad_ready) {
  MIRROR_CHECK(dy.shape() == x_shape_, kInvalidArgument,
               "position_embedding backward expects dy of shape " << to_string(x_shape_) << ", got "
                                                                  << to_string(dy.shape()));
  const std::int64_t row = x_shape_[1] * channels_;
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    if (mode == GradMode::kOverwrite) ops::fill(device_, weight_.grad, context_ * channels_, 0.0f);
    detail::cuda::position_embedding_backward(dy.data(), x_shape_[0], x_shape_[1], channels_, /*accumulate=*/true,
                                              weight_.grad + offset_ * channels_);
    if (grad_ready) grad_ready(0);
    return need_dx ? &dy : nullptr;
  }
#endif
  if (mode == GradMode::kOverwrite)
    std::memset(weight_.grad, 0, static_cast<std::size_t>(context_ * channels_) * sizeof(float));
  const float* g = dy.data();
  float* dw = weight_.grad + offset_ * channels_;
  for (std::int64_t n = 0; n < x_shape_[0]; ++n)
    for (std::int64_t i = 0; i < row; ++i) dw[i] += g[n * row + i];
  if (grad_ready) grad_ready(0);
  return need_dx ? &dy : nullptr;
}

}  // namespace mirror::nn
