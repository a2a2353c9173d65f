// layer_norm.cc — mirror/nn/layer_norm.h: one pass per row for the statistics (double), one for y; backward
// sums dy and dy·x̂ per channel in double, then dx = rstd · (dy·γ − mean(dy·γ) − x̂ · mean(dy·γ·x̂)) per row. The
// same on CUDA with lm_kernels_cuda.h's kernels.
#include "mirror/nn/layer_norm.h"

#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#if MIRROR_HAVE_CUDA
#include "cuda/lm_kernels_cuda.h"
#endif

namespace mirror::nn {

LayerNorm::LayerNorm(std::int64_t channels, Device device, float eps)
    : channels_(channels), device_(device), eps_(eps), xhat_({0}, device), y_({0}, device), dx_({0}, device),
      row_stats_({0}, device) {
  MIRROR_CHECK(channels >= 1 && eps > 0.0f, kInvalidArgument,
               "layernorm needs channels >= 1 and eps > 0, got channels=" << channels << " eps=" << eps);
}

std::unique_ptr<Layer> LayerNorm::create(const LayerArgs& args) {
  MIRROR_CHECK(!args.input.empty(), kInvalidArgument, "layernorm needs samples with at least one axis");
  const double eps = args.settings.number("eps", 1e-5);
  MIRROR_CHECK(eps > 0.0, kInvalidArgument, "\"eps\" must be > 0, got " << eps);
  return std::make_unique<LayerNorm>(args.input.back(), args.device, static_cast<float>(eps));
}

Shape LayerNorm::output_sample_shape(const Shape& input_sample_shape) const {
  MIRROR_CHECK(!input_sample_shape.empty() && input_sample_shape.back() == channels_, kInvalidArgument,
               "layernorm over " << channels_ << " channels needs samples whose last axis has " << channels_
                                 << " values, got " << to_string(input_sample_shape));
  return input_sample_shape;
}

std::vector<ParamSpec> LayerNorm::parameter_specs() const {
  return {{"weight", {channels_}, true}, {"bias", {channels_}, true}};
}

void LayerNorm::bind_parameters(std::span<const ParamBinding> bindings) {
  MIRROR_CHECK(bindings.size() == 2, kInternal, "layernorm binds 2 parameters, got " << bindings.size());
  weight_ = bindings[0];
  bias_ = bindings[1];
}

void LayerNorm::init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t) const {
  for (float& v : values) v = local_index == 0 ? 1.0f : 0.0f;
}

const Tensor& LayerNorm::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr, kInternal, "layernorm used before its parameters were bound");
  MIRROR_CHECK(x.shape().size() >= 2 && x.shape().back() == channels_, kInvalidArgument,
               "layernorm needs a batch [N, ..., " << channels_ << "], got " << to_string(x.shape()));
  const std::int64_t rows = x.numel() / channels_, c = channels_;
  y_.resize(x.shape());
  xhat_.resize(x.shape());
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    row_stats_.resize({2, rows});  // mean, rstd
    detail::cuda::layernorm_forward(x.data(), weight_.value, bias_.value, rows, c, eps_, xhat_.data(), y_.data(),
                                    row_stats_.data(), row_stats_.data() + rows);
    return y_;
  }
#endif
  mean_.resize(static_cast<std::size_t>(rows));
  rstd_.resize(static_cast<std::size_t>(rows));
  const float *in = x.data(), *gamma = weight_.value, *beta = bias_.value;
  float *xhat = xhat_.data(), *out = y_.data();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * c;
    double sum = 0.0, sq = 0.0;
    for (std::int64_t j = 0; j < c; ++j) sum += row[j];
    const double mean = sum / static_cast<double>(c);
    for (std::int64_t j = 0; j < c; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const float m = static_cast<float>(mean);
    const float rstd = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(c) + eps_));
    mean_[r] = m;
    rstd_[r] = rstd;
    for (std::int64_t j = 0; j < c; ++j) {
      const float h = (row[j] - m) * rstd;
      xhat[r * c + j] = h;
      out[r * c + j] = h * gamma[j] + beta[j];
    }
  }
  return y_;
}

const Tensor* LayerNorm::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(dy.shape() == xhat_.shape(), kInvalidArgument,
               "layernorm backward expects dy of shape " << to_string(xhat_.shape()) << ", got " << to_string(dy.shape()));
  const std::int64_t c = channels_, rows = dy.numel() / c;
  const float *g = dy.data(), *xhat = xhat_.data(), *gamma = weight_.value;
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    detail::cuda::layernorm_parameter_grads(g, xhat, rows, c, mode == GradMode::kAccumulate, weight_.grad, bias_.grad);
    if (grad_ready) {
      grad_ready(1);
      grad_ready(0);
    }
    if (!need_dx) return nullptr;
    dx_.resize(dy.shape());
    detail::cuda::layernorm_input_grad(g, xhat, gamma, row_stats_.data() + rows, rows, c, dx_.data());
    return &dx_;
  }
#endif
  std::vector<double> dbeta(static_cast<std::size_t>(c), 0.0), dgamma(static_cast<std::size_t>(c), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < c; ++j) {
      dbeta[j] += g[r * c + j];
      dgamma[j] += static_cast<double>(g[r * c + j]) * xhat[r * c + j];
    }
  const bool accumulate = mode == GradMode::kAccumulate;
  for (std::int64_t j = 0; j < c; ++j) {
    bias_.grad[j] = static_cast<float>(dbeta[j] + (accumulate ? bias_.grad[j] : 0.0f));
    weight_.grad[j] = static_cast<float>(dgamma[j] + (accumulate ? weight_.grad[j] : 0.0f));
  }
  if (grad_ready) {
    grad_ready(1);
    grad_ready(0);
  }
  if (!need_dx) return nullptr;
  dx_.resize(dy.shape());
  float* out = dx_.data();
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean_g = 0.0, mean_gx = 0.0;
    for (std::int64_t j = 0; j < c; ++j) {
      const double gj = static_cast<double>(g[r * c + j]) * gamma[j];
      mean_g += gj;
      mean_gx += gj * xhat[r * c + j];
    }
    mean_g /= static_cast<double>(c);
    mean_gx /= static_cast<double>(c);
    for (std::int64_t j = 0; j < c; ++j) {
      const double gj = static_cast<double>(g[r * c + j]) * gamma[j];
      out[r * c + j] = static_cast<float>(rstd_[r] * (gj - mean_g - xhat[r * c + j] * mean_gx));
    }
  }
  return &dx_;
}

}  // namespace mirror::nn
