// dropout.cc — mirror/nn/dropout.h: the mask drawn on the host from the forward context, copied to the
// device, multiplied in; backward multiplies dy by the same mask.
#include "mirror/nn/dropout.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

float dropout_uniform(std::uint64_t seed, std::int64_t step, std::int64_t sample, std::int64_t element) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(step));
  h = splitmix64(h ^ static_cast<std::uint64_t>(sample));
  h = splitmix64(h ^ static_cast<std::uint64_t>(element));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
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
  host_mask_.resize(static_cast<std::size_t>(x.numel()));
  for (std::int64_t r = 0; r < batch; ++r) {
    const std::int64_t id = have_ids ? context_->sample_ids[static_cast<std::size_t>(r)] : r;
    float* row = host_mask_.data() + r * per_sample;
    for (std::int64_t e = 0; e < per_sample; ++e) row[e] = dropout_uniform(seed, step, id, e) >= p_ ? keep_scale : 0.0f;
  }
  mask_.resize(x.shape());
  mask_.copy_from_host(host_mask_);
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
