// conv2d.cc — mirror/train/conv2d.h on the CPU through oneDNN's convolution primitives (forward, backward
// data, backward weights+bias). Tensors between layers stay plain NCHW / OIHW; inside, a layer with enough
// input channels lets oneDNN pick blocked layouts and reorders to and from them (blocked_layouts below).
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

struct Conv2d::Primitives {
  Shape x_shape;
  dnnl::memory::desc bias;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  // Each primitive's view of its tensors: Mirror's plain buffers, or blocked copies (see blocked_layouts).
  dc::Staged fwd_src, fwd_weights, fwd_dst;
  dc::Staged bww_src, bww_dy, bww_dw;
  dc::Staged bwd_dy, bwd_weights, bwd_dx;
};

namespace {
// Whether to let oneDNN choose blocked layouts (nChw8c and the like, its direct JIT kernels) and pay the
// reorders from and to NCHW around each primitive, or keep everything plain (its im2col + GEMM kernels).
// Measured by mirror-layer-bench at batch 64, one thread, AVX2 (forward + both backwards, reorders included;
// docs/compute.md): blocked 1.05–2.2× ahead for 3×3 kernels over 16–64 input channels, 2× behind with 1 input
// channel (an image model's first layer) and for 1×1 kernels (a plain GEMM without im2col: resnet's projections).
bool blocked_layouts(const Conv2dGeometry& g) { return g.in_channels >= 8 && g.kernel_h * g.kernel_w > 1; }
}  // namespace

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w,
               std::int64_t stride_h, std::int64_t stride_w, std::int64_t pad_h, std::int64_t pad_w, bool bias,
               Device device, ConvLayout layout)
    : geo_{in_channels, out_channels, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w},
      has_bias_(bias),
      device_(device),
      layout_(layout),
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
    const dc::dims src_dims{x_shape[0], x_shape[1], x_shape[2], x_shape[3]},
        w_dims{geo_.out_channels, geo_.in_channels, geo_.kernel_h, geo_.kernel_w},
        dst_dims{x_shape[0], out[0], out[1], out[2]};
    const auto src = dc::plain(src_dims, dc::tag::nchw), weights = dc::plain(w_dims, dc::tag::oihw),
               dst = dc::plain(dst_dims, dc::tag::nchw);
    const bool blocked = layout_ == ConvLayout::kBlocked ||
                         (layout_ == ConvLayout::kAuto && blocked_layouts(geo_));
    const auto any = [&](const dc::dims& d, const dnnl::memory::desc& plain) {
      return blocked ? dc::plain(d, dc::tag::any) : plain;
    };
    const auto src_a = any(src_dims, src), w_a = any(w_dims, weights), dst_a = any(dst_dims, dst);
    p->bias = dc::plain({geo_.out_channels}, dc::tag::x);
    const dnnl::memory::desc no_bias;
    const dnnl::memory::desc& bias = has_bias_ ? p->bias : no_bias;
    const dc::dims strides{geo_.stride_h, geo_.stride_w}, pad{geo_.pad_h, geo_.pad_w};
    // Symmetric padding as PyTorch's: oneDNN sizes the output (in + pl + pr − k) / s + 1 rounded down, as
    // output_sample_shape does, so rows the last window does not reach are simply unused.
    const dc::dims& pad_r = pad;
    const auto fwd_pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_a,
                                        w_a, bias, dst_a, strides, pad, pad_r),
        dc::engine());
    const auto bwd_pd = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_a, w_a, dst_a, strides, pad,
                                              pad_r),
        dc::engine(), fwd_pd);
    const auto bww_pd = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_a, w_a, bias, dst_a, strides,
                                                 pad, pad_r),
        dc::engine(), fwd_pd);
    p->forward = dnnl::convolution_forward(fwd_pd);
    p->backward_data = dnnl::convolution_backward_data(bwd_pd);
    p->backward_weights = dnnl::convolution_backward_weights(bww_pd);
    p->fwd_src = dc::Staged(src, fwd_pd.src_desc());
    p->fwd_weights = dc::Staged(weights, fwd_pd.weights_desc());
    p->fwd_dst = dc::Staged(dst, fwd_pd.dst_desc());
    p->bww_src = dc::Staged(src, bww_pd.src_desc());
    p->bww_dy = dc::Staged(dst, bww_pd.diff_dst_desc());
    p->bww_dw = dc::Staged(weights, bww_pd.diff_weights_desc());
    p->bwd_dy = dc::Staged(dst, bwd_pd.diff_dst_desc());
    p->bwd_weights = dc::Staged(weights, bwd_pd.weights_desc());
    p->bwd_dx = dc::Staged(src, bwd_pd.diff_src_desc());
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
  dc::run("conv2d forward", [&] {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.fwd_src.input(x.data())},
                                               {DNNL_ARG_WEIGHTS, p.fwd_weights.input(weight_.value)},
                                               {DNNL_ARG_DST, p.fwd_dst.output(y_.data())}};
    if (has_bias_) args.emplace(DNNL_ARG_BIAS, dc::wrap(p.bias, bias_.value));
    dc::execute(p.forward, args);
    p.fwd_dst.finish_output(y_.data());
  });
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
  dc::run("conv2d backward weights", [&] {
    // x is unchanged since forward (the Layer contract), so its blocked copy is reused when the layouts agree.
    const bool reuse_x = p.fwd_src.copies() && p.bww_src.copies() &&
                         p.fwd_src.staged().get_desc() == p.bww_src.staged().get_desc();
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, reuse_x ? p.fwd_src.staged() : p.bww_src.input(x_->data())},
        {DNNL_ARG_DIFF_DST, p.bww_dy.input(dy.data())},
        {DNNL_ARG_DIFF_WEIGHTS, p.bww_dw.output(dw)}};
    if (has_bias_) args.emplace(DNNL_ARG_DIFF_BIAS, dc::wrap(p.bias, db));
    dc::execute(p.backward_weights, args);
    p.bww_dw.finish_output(dw);
  });
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
  dc::run("conv2d backward data", [&] {
    const bool reuse_dy = p.bww_dy.copies() && p.bwd_dy.copies() &&
                          p.bww_dy.staged().get_desc() == p.bwd_dy.staged().get_desc();
    const bool reuse_w = p.fwd_weights.copies() && p.bwd_weights.copies() &&
                         p.fwd_weights.staged().get_desc() == p.bwd_weights.staged().get_desc();
    const std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_DIFF_DST, reuse_dy ? p.bww_dy.staged() : p.bwd_dy.input(dy.data())},
        {DNNL_ARG_WEIGHTS, reuse_w ? p.fwd_weights.staged() : p.bwd_weights.input(weight_.value)},
        {DNNL_ARG_DIFF_SRC, p.bwd_dx.output(dx_.data())}};
    dc::execute(p.backward_data, args);
    p.bwd_dx.finish_output(dx_.data());
  });
  return &dx_;
}

}  // namespace mirror::train
