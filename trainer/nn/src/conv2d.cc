// conv2d.cc — mirror/nn/conv2d.h: shapes, checks, initialisation and the order of backward; the
// arithmetic is the device's Conv2dKernels (conv2d_kernels.h: oneDNN on the CPU, cuDNN on CUDA), built for
// one input shape and rebuilt when it changes (the last, shorter batch of an epoch, evaluation).
#include "mirror/nn/conv2d.h"

#include <cmath>

#include "backend.h"
#include "conv2d_kernels.h"
#include "init.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/precision.h"

namespace mirror::nn {

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w,
               std::int64_t stride_h, std::int64_t stride_w, std::int64_t pad_h, std::int64_t pad_w, bool bias,
               Device device, ConvLayout layout)
    : geo_{in_channels, out_channels, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w},
      has_bias_(bias),
      device_(device),
      layout_(layout),
      y_({0}, device),
      dx_({0}, device) {
  accepts_blocked_ = device.is_cpu();
  MIRROR_CHECK(in_channels > 0 && out_channels > 0 && kernel_h > 0 && kernel_w > 0 && stride_h > 0 && stride_w > 0 &&
                   pad_h >= 0 && pad_w >= 0,
               kInvalidArgument,
               "conv2d needs positive channels, kernel and stride and non-negative padding, got in="
                   << in_channels << " out=" << out_channels << " kernel=" << kernel_h << "x" << kernel_w
                   << " stride=" << stride_h << "x" << stride_w << " padding=" << pad_h << "x" << pad_w);
}

Conv2d::~Conv2d() = default;

Shape Conv2d::output_sample_shape(const Shape& s) const {
  MIRROR_CHECK(s.size() == 3 && s[0] == geo_.in_channels, kInvalidArgument,
               "conv2d with " << geo_.in_channels << " input channels needs samples [" << geo_.in_channels
                              << ", H, W], got " << to_string(s));
  const std::int64_t h = s[1] + 2 * geo_.pad_h, w = s[2] + 2 * geo_.pad_w;
  MIRROR_CHECK(h >= geo_.kernel_h && w >= geo_.kernel_w, kInvalidArgument,
               "conv2d kernel " << geo_.kernel_h << "x" << geo_.kernel_w << " does not fit samples "
                                << to_string(s) << " padded by " << geo_.pad_h << "x" << geo_.pad_w);
  return {geo_.out_channels, (h - geo_.kernel_h) / geo_.stride_h + 1, (w - geo_.kernel_w) / geo_.stride_w + 1};
}

std::vector<ParamSpec> Conv2d::parameter_specs() const {
  std::vector<ParamSpec> specs{{"weight", {geo_.out_channels, geo_.in_channels, geo_.kernel_h, geo_.kernel_w}}};
  if (has_bias_) specs.push_back({"bias", {geo_.out_channels}});
  return specs;
}

void Conv2d::bind_parameters(std::span<const ParamBinding> bindings) {
  MIRROR_CHECK(bindings.size() == (has_bias_ ? 2u : 1u), kInternal,
               "conv2d expects " << (has_bias_ ? 2 : 1) << " parameter bindings, got " << bindings.size());
  weight_ = bindings[0];
  if (has_bias_) bias_ = bindings[1];
}

void Conv2d::init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const {
  if (local_index == 0) {
    const double fan_in = static_cast<double>(geo_.in_channels * geo_.kernel_h * geo_.kernel_w);
    detail::fill_uniform(values, static_cast<float>(std::sqrt(6.0 / fan_in)), seed);
  } else {
    for (float& v : values) v = 0.0f;
  }
}

detail::Conv2dKernels& Conv2d::kernels_for(const Tensor& x, const Shape& y_shape) {
  const bool bf16 = computes_bf16();
  if (kernels_ && kernels_shape_ == x.shape() && kernels_layout_ == x.layout() &&
      kernels_blocked_output_ == blocked_output_ && kernels_bf16_ == bf16)
    return *kernels_;
  const detail::Conv2dProblem problem{geo_,    has_bias_,  layout_,         x.shape(), y_shape,
                                      device_, x.layout(), blocked_output_, bf16};
#if MIRROR_HAVE_CUDA
  kernels_ = device_.is_cuda() ? detail::make_conv2d_cuda(problem) : detail::make_conv2d_cpu(problem);
#else
  detail::require_cpu(device_);
  kernels_ = detail::make_conv2d_cpu(problem);
#endif
  kernels_shape_ = x.shape();
  kernels_layout_ = x.layout();
  kernels_blocked_output_ = blocked_output_;
  kernels_bf16_ = bf16;
  return *kernels_;
}

const Tensor& Conv2d::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr, kInternal, "conv2d used before its parameters were bound");
  MIRROR_CHECK(x.shape().size() == 4 && x.dim(0) > 0, kInvalidArgument,
               "conv2d needs a batch [N, " << geo_.in_channels << ", H, W], got " << to_string(x.shape()));
  const Shape out = output_sample_shape({x.dim(1), x.dim(2), x.dim(3)});
  const Shape y_shape{x.dim(0), out[0], out[1], out[2]};
  detail::Conv2dKernels& k = kernels_for(x, y_shape);
  x_ = &x;
  y_.resize(y_shape);
  y_.set_layout(k.y_layout());
  k.forward(x.data(), weight_.value, has_bias_ ? bias_.value : nullptr, y_.data());
  return y_;
}

std::string Conv2d::implementation() const { return kernels_ ? kernels_->implementation() : std::string(); }

const Tensor* Conv2d::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(x_ != nullptr && kernels_, kInternal, "conv2d backward called before forward");
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               "conv2d backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  MIRROR_CHECK(dy.layout() == y_.layout(), kInternal,
               "conv2d backward expects dy in layout " << to_string(y_.layout()) << ", got " << to_string(dy.layout()));
  kernels_->backward_weights(x_->data(), dy.data(), weight_.grad, has_bias_ ? bias_.grad : nullptr,
                             mode == GradMode::kAccumulate);
  if (grad_ready) {
    if (has_bias_) grad_ready(1);
    grad_ready(0);
  }
  if (!need_dx) return nullptr;
  dx_.resize(x_->shape());
  dx_.set_layout(x_->layout());
  kernels_->backward_data(dy.data(), weight_.value, dx_.data());
  return &dx_;
}

// Settings: out_channels, kernel, stride (1), padding (0), each a number or [h, w]; bias (true).
std::unique_ptr<Layer> Conv2d::create(const LayerArgs& args) {
  const LayerSettings& s = args.settings;
  MIRROR_CHECK(args.input.size() == 3, kInvalidArgument,
               s.where() << " needs image samples [C, H, W], got " << to_string(args.input));
  const std::int64_t out = s.required_integer("out_channels", 1);
  const auto [kh, kw] = s.pair("kernel", {0, 0}, 1);
  MIRROR_CHECK(kh >= 1 && kw >= 1, kInvalidArgument, s.where() << " needs a kernel (a number or [h, w])");
  const auto [sh, sw] = s.pair("stride", {1, 1}, 1);
  const auto [ph, pw] = s.pair("padding", {0, 0}, 0);
  return std::make_unique<Conv2d>(args.input[0], out, kh, kw, sh, sw, ph, pw, s.boolean("bias", true), args.device);
}

}  // namespace mirror::nn
