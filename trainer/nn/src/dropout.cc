// dropout.cc — mirror/nn/dropout.h: one key per sample computed on the host from the forward context, the
// mask drawn from the keys where the batch is (ops::dropout_mask: on the GPU for CUDA tensors, so only the
// keys cross the bus), multiplied in; backward multiplies dy by the same mask.
#include "mirror/nn/dropout.h"

#include "dropout_hash.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {
float dropout_uniform(std::uint64_t seed, std::int64_t step, std::int64_t sample, std::int64_t element) {
  return detail::dropout_uniform_in_row(detail::dropout_row_key(seed, step, sample), element);
}

Dropout::Dropout(float p, Device device) : p_(p), device_(device), mask_({0}, device), y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(p >= 0.0f && p < 1.0f, kInvalidArgument, "dropout probability must be in [0, 1), got " << p);
}

std::unique_ptr<Layer> Dropout::create(const LayerArgs& args) {
  const double p = args.settings.number("p", 0.5);
  MIRROR_CHECK(p >= 0.0 && p < 1.0, kInvalidArgument, args.settings.where() << ": p must be in [0, 1), got " << p);
  return std::make_unique<Dropout>(static_cast<float>(p), args.device);
}

const Tensor& Dropout::forward(const Tensor& x) {
  MIRROR_CHECK(!x.shape().empty() && x.dim(0) >= 1, kInvalidArgument, "dropout got a batch of shape " << to_string(x.shape()));
  masked_ = training() && p_ > 0.0f;
  shape_ = x.shape();
  if (!masked_) {
    pass_ = Tensor::view(const_cast<float*>(x.data()), x.shape(), x.device());
    return pass_;
  }
  const std::int64_t batch = x.dim(0), per_sample = x.numel() / batch;
  const bool have_ids = context_ && !context_->sample_ids.empty();
  const std::uint64_t seed = context_ ? context_->seed : 0;
  const std::int64_t step = context_ ? context_->step : 0;
  const float keep_scale = 1.0f / (1.0f - p_);
  row_keys_.resize(static_cast<std::size_t>(batch));
  for (std::int64_t r = 0; r < batch; ++r) {
    const std::int64_t id = have_ids ? context_->sample_ids[static_cast<std::size_t>(r)] : r;
    row_keys_[static_cast<std::size_t>(r)] = detail::dropout_row_key(seed, step, id);
  }
  mask_.resize(x.shape());
  ops::dropout_mask(device_, row_keys_.data(), batch, per_sample, p_, keep_scale, mask_.data());
  y_.resize(x.shape());
  ops::multiply(device_, x.numel(), x.data(), mask_.data(), y_.data());
  return y_;
}

const Tensor* Dropout::backward(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) {
  MIRROR_CHECK(dy.numel() == shape_numel(shape_), kInvalidArgument,
               "dropout backward expects dy of shape " << to_string(shape_) << ", got " << to_string(dy.shape()));
  if (!need_dx) return nullptr;
  if (!masked_) {
    pass_ = Tensor::view(const_cast<float*>(dy.data()), dy.shape(), dy.device());
    return &pass_;
  }
  dx_.resize(dy.shape());
  ops::multiply(device_, dy.numel(), dy.data(), mask_.data(), dx_.data());
  return &dx_;
}

}  // namespace mirror::nn
