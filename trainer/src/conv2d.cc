// conv2d.cc — mirror/train/conv2d.h on the CPU through oneDNN's convolution primitives (forward, backward
// data, backward weights+bias), all over plain NCHW / OIHW buffers, so no reorders are needed between layers.
// The primitives are built for one input shape and rebuilt when it changes (the last, shorter batch of an
// epoch, evaluation); oneDNN's own primitive cache makes a rebuild for a shape seen before cheap.
// kAccumulate: oneDNN overwrites its outputs, so the gradients go to scratch tensors first and are added.
#include "mirror/train/conv2d.h"

#include <cmath>

#include "dnnl_cpu.h"
#include "init.h"
#include "mirror/error.h"
#include "mirror/train/ops.h"

namespace mirror::train {

namespace dc = detail::dnnl_cpu;
using dnnl::algorithm;
using dnnl::prop_kind;

struct Conv2d::Primitives {
  Shape x_shape;
  dnnl::memory::desc src, weights, bias, dst;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
};

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w,
               std::int64_t stride_h, std::int64_t stride_w, std::int64_t pad_h, std::int64_t pad_w, bool bias,
               Device device)
    : geo_{in_channels, out_channels, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w},
      has_bias_(bias),
      device_(device),
      y_({0}, device),
      dx_({0}, device),
      dw_scratch_({0}, device),
      db_scratch_({0}, device) {
  MIRROR_CHECK(in_channels > 0 && out_channels > 0 && kernel_h > 0 && kernel_w > 0 && stride_h > 0 && stride_w > 0 &&
                   pad_h >= 0 && pad_w >= 0,
               kInvalidArgument,
               "conv2d needs positive channels, kernel and stride and non-negative padding, got in="
                   << in_channels << " out=" << out_channels << " kernel=" << kernel_h << "x" << kernel_w
                   << " stride=" << stride_h << "x" << stride_w << " padding=" << pad_h << "x" << pad_w);
  MIRROR_CHECK(device.is_cpu(), kInvalidArgument, "conv2d on " << to_string(device) << ": only the CPU is implemented");
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

Conv2d::Primitives& Conv2d::primitives_for(const Shape& x_shape) {
  if (prims_ && prims_->x_shape == x_shape) return *prims_;
  const Shape out = output_sample_shape({x_shape[1], x_shape[2], x_shape[3]});
  auto p = std::make_unique<Primitives>();
  p->x_shape = x_shape;
  dc::run("conv2d", [&] {
    p->src = dc::plain({x_shape[0], x_shape[1], x_shape[2], x_shape[3]}, dc::tag::nchw);
    p->weights = dc::plain({geo_.out_channels, geo_.in_channels, geo_.kernel_h, geo_.kernel_w}, dc::tag::oihw);
    p->bias = dc::plain({geo_.out_channels}, dc::tag::x);
    p->dst = dc::plain({x_shape[0], out[0], out[1], out[2]}, dc::tag::nchw);
    const dc::dims strides{geo_.stride_h, geo_.stride_w}, pad{geo_.pad_h, geo_.pad_w};
    // Symmetric padding as PyTorch's: oneDNN sizes the output (in + pl + pr − k) / s + 1 rounded down, as
    // output_sample_shape does, so rows the last window does not reach are simply unused.
    const dc::dims& pad_r = pad;
    const dnnl::memory::desc no_bias;
    const auto fwd_desc = dnnl::convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                                          p->src, p->weights, has_bias_ ? p->bias : no_bias, p->dst,
                                                          strides, pad, pad_r);
    const auto fwd_pd = dnnl::convolution_forward::primitive_desc(fwd_desc, dc::engine());
    p->forward = dnnl::convolution_forward(fwd_pd);
    const auto bwd_data_desc = dnnl::convolution_backward_data::desc(algorithm::convolution_direct, p->src, p->weights,
                                                                     p->dst, strides, pad, pad_r);
    p->backward_data = dnnl::convolution_backward_data(
        dnnl::convolution_backward_data::primitive_desc(bwd_data_desc, dc::engine(), fwd_pd));
    const auto bwd_w_desc = dnnl::convolution_backward_weights::desc(algorithm::convolution_direct, p->src, p->weights,
                                                                     has_bias_ ? p->bias : no_bias, p->dst, strides,
                                                                     pad, pad_r);
    p->backward_weights = dnnl::convolution_backward_weights(
        dnnl::convolution_backward_weights::primitive_desc(bwd_w_desc, dc::engine(), fwd_pd));
  });
  prims_ = std::move(p);
  return *prims_;
}

const Tensor& Conv2d::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr, kInternal, "conv2d used before its parameters were bound");
  MIRROR_CHECK(x.shape().size() == 4 && x.dim(0) > 0, kInvalidArgument,
               "conv2d needs a batch [N, " << geo_.in_channels << ", H, W], got " << to_string(x.shape()));
  const Shape out = output_sample_shape({x.dim(1), x.dim(2), x.dim(3)});
  Primitives& p = primitives_for(x.shape());
  x_ = &x;
  y_.resize({x.dim(0), out[0], out[1], out[2]});
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dc::wrap(p.src, x.data())},
                                             {DNNL_ARG_WEIGHTS, dc::wrap(p.weights, weight_.value)},
                                             {DNNL_ARG_DST, dc::wrap(p.dst, y_.data())}};
  if (has_bias_) args.emplace(DNNL_ARG_BIAS, dc::wrap(p.bias, bias_.value));
  dc::run("conv2d forward", [&] { dc::execute(p.forward, args); });
  return y_;
}

const Tensor* Conv2d::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(x_ != nullptr && prims_, kInternal, "conv2d backward called before forward");
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               "conv2d backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  Primitives& p = *prims_;
  const bool accumulate = mode == GradMode::kAccumulate;
  const std::int64_t weight_numel = geo_.out_channels * geo_.in_channels * geo_.kernel_h * geo_.kernel_w;
  float* dw = weight_.grad;
  float* db = bias_.grad;
  if (accumulate) {
    dw_scratch_.resize({weight_numel});
    dw = dw_scratch_.data();
    if (has_bias_) {
      db_scratch_.resize({geo_.out_channels});
      db = db_scratch_.data();
    }
  }
  std::unordered_map<int, dnnl::memory> wargs{{DNNL_ARG_SRC, dc::wrap(p.src, x_->data())},
                                              {DNNL_ARG_DIFF_DST, dc::wrap(p.dst, dy.data())},
                                              {DNNL_ARG_DIFF_WEIGHTS, dc::wrap(p.weights, dw)}};
  if (has_bias_) wargs.emplace(DNNL_ARG_DIFF_BIAS, dc::wrap(p.bias, db));
  dc::run("conv2d backward weights", [&] { dc::execute(p.backward_weights, wargs); });
  if (accumulate) {
    ops::axpy(device_, weight_numel, 1.0f, dw, weight_.grad);
    if (has_bias_) ops::axpy(device_, geo_.out_channels, 1.0f, db, bias_.grad);
  }
  if (grad_ready) {
    if (has_bias_) grad_ready(1);
    grad_ready(0);
  }
  if (!need_dx) return nullptr;
  dx_.resize(x_->shape());
  const std::unordered_map<int, dnnl::memory> dargs{{DNNL_ARG_DIFF_DST, dc::wrap(p.dst, dy.data())},
                                                    {DNNL_ARG_WEIGHTS, dc::wrap(p.weights, weight_.value)},
                                                    {DNNL_ARG_DIFF_SRC, dc::wrap(p.src, dx_.data())}};
  dc::run("conv2d backward data", [&] { dc::execute(p.backward_data, dargs); });
  return &dx_;
}

}  // namespace mirror::train
