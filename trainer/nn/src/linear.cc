// linear.cc — mirror/nn/linear.h: y = x·Wᵀ + b (sgemm, or on AVX-512 CPUs a oneDNN matmul: linear_cpu_matmul.h;
// with bfloat16 compute its bfloat16 products, on either device: linear_bf16.h);
// backward dW = dyᵀ·x, db = column sums of dy, dx = dy·W, each one sgemm with the right transposes over the
// row-major buffers (no copies).
#include "mirror/nn/linear.h"

#include <cmath>

#include "init.h"
#include "linear_bf16.h"
#include "linear_cpu_matmul.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"
#include "mirror/nn/precision.h"

namespace mirror::nn {

using ops::Trans;

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Device device, bool bias, bool per_position)
    : in_(in_features), out_(out_features), has_bias_(bias), per_position_(per_position), device_(device),
      y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(in_ > 0 && out_ > 0, kInvalidArgument,
               "linear layer needs positive sizes, got in=" << in_ << " out=" << out_);
  if (device_.is_cpu() && detail::cpu_linear_forward_uses_matmul())
    cpu_forward_ = std::make_unique<detail::CpuLinearForward>();
}

Linear::~Linear() = default;

std::unique_ptr<Layer> Linear::create(const LayerArgs& args) {
  const std::int64_t out = args.settings.text("out_features") == "classes"
                               ? args.classes
                               : args.settings.required_integer("out_features", 1);
  const bool per_position = args.input.size() == 2;  // [T, C]: a sequence
  auto layer = std::make_unique<Linear>(per_position ? args.input.back() : shape_numel(args.input), out, args.device,
                                        args.settings.boolean("bias", true), per_position);
  const double init_std = args.settings.number("init_std", 0.0);
  MIRROR_CHECK(init_std >= 0.0, kInvalidArgument, "\"init_std\" must be >= 0, got " << init_std);
  layer->set_init_std(init_std);
  return layer;
}

Shape Linear::output_sample_shape(const Shape& input_sample_shape) const {
  if (per_position_) {
    MIRROR_CHECK(input_sample_shape.size() == 2 && input_sample_shape[1] == in_, kInvalidArgument,
                 "linear layer over positions of " << in_ << " values cannot take samples of shape "
                                                   << to_string(input_sample_shape) << "; expected [T, " << in_ << "]");
    return {input_sample_shape[0], out_};
  }
  MIRROR_CHECK(shape_numel(input_sample_shape) == in_, kInvalidArgument,
               "linear layer with " << in_ << " inputs cannot take samples of shape " << to_string(input_sample_shape));
  return {out_};
}

std::int64_t Linear::rows_of(const Tensor& x) const { return per_position_ && x.shape().size() == 3 ? x.dim(0) * x.dim(1) : x.dim(0); }

std::vector<ParamSpec> Linear::parameter_specs() const {
  if (!has_bias_) return {{"weight", {out_, in_}}};
  return {{"weight", {out_, in_}}, {"bias", {out_}}};
}

void Linear::bind_parameters(std::span<const ParamBinding> bindings) {
  const std::size_t want = has_bias_ ? 2 : 1;
  MIRROR_CHECK(bindings.size() == want, kInternal,
               "linear layer expects " << want << " parameter bindings, got " << bindings.size());
  weight_ = bindings[0];
  if (has_bias_) bias_ = bindings[1];
}

void Linear::init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const {
  if (local_index == 0 && init_std_ > 0.0) {
    detail::fill_normal(values, init_std_, seed);
  } else if (local_index == 0) {
    detail::fill_uniform(values, static_cast<float>(std::sqrt(6.0 / static_cast<double>(in_))), seed);
  } else {
    for (float& v : values) v = 0.0f;
  }
}

const Tensor& Linear::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr, kInternal, "linear layer used before its parameters were bound");
  MIRROR_CHECK(x.shape().size() >= 1 && x.dim(0) > 0 && (!per_position_ || x.shape().size() == 3) &&
                   x.numel() == rows_of(x) * in_,
               kInvalidArgument, "linear layer with " << in_ << " inputs" << (per_position_ ? " per position" : "")
                                                      << " got a batch of shape " << to_string(x.shape()));
  const std::int64_t batch = rows_of(x);
  x_ = &x;
  if (per_position_)
    y_.resize({x.dim(0), x.dim(1), out_});
  else
    y_.resize({batch, out_});
  bf16_forward_ = computes_bf16();
  if (bf16_forward_) {
    if (!bf16_) bf16_ = std::make_unique<detail::LinearBf16>(device_);
    bf16_->forward(batch, out_, in_, x.data(), weight_.value, y_.data());
  } else if (cpu_forward_)
    cpu_forward_->run("linear", batch, out_, in_, x.data(), weight_.value, y_.data());
  else
    ops::gemm(device_, Trans::kNo, Trans::kYes, batch, out_, in_, 1.0f, x.data(), in_, weight_.value, in_, 0.0f,
              y_.data(), out_);
  if (has_bias_) ops::add_row_bias(device_, y_.data(), bias_.value, batch, out_);
  return y_;
}

const Tensor* Linear::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(x_ != nullptr, kInternal, "linear backward called before forward");
  const std::int64_t batch = rows_of(*x_);
  MIRROR_CHECK(dy.numel() == batch * out_, kInvalidArgument,
               "linear backward expects dy of shape [" << batch << ", " << out_ << "], got " << to_string(dy.shape()));
  const float beta = mode == GradMode::kAccumulate ? 1.0f : 0.0f;
  if (has_bias_) {
    ops::column_sums(device_, dy.data(), batch, out_, beta, bias_.grad);
    if (grad_ready) grad_ready(1);
  }
  if (need_dx) dx_.resize(x_->shape());
  if (bf16_forward_) {
    bf16_->backward(batch, out_, in_, dy.data(), beta, weight_.grad, need_dx ? dx_.data() : nullptr);
    if (grad_ready) grad_ready(0);
    return need_dx ? &dx_ : nullptr;
  }
  ops::gemm(device_, Trans::kYes, Trans::kNo, out_, in_, batch, 1.0f, dy.data(), out_, x_->data(), in_, beta,
            weight_.grad, in_);
  if (grad_ready) grad_ready(0);
  if (!need_dx) return nullptr;
  ops::gemm(device_, Trans::kNo, Trans::kNo, batch, in_, out_, 1.0f, dy.data(), out_, weight_.value, in_, 0.0f,
            dx_.data(), in_);
  return &dx_;
}

}  // namespace mirror::nn
