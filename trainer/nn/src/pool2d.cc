// pool2d.cc — mirror/nn/pool2d.h: window checks and shapes; the arithmetic is the device's Pool2dKernels
// (pool2d_kernels.h: loops on the CPU, cuDNN on CUDA), built per input shape, layout and training flag and
// rebuilt when one changes. Kernels that can (fused(): the CPU's 2×2 max pooling of a blocked x) apply an absorbed
// ReLU and write y in the layout it leaves in themselves. Otherwise a blocked x (CPU) is pooled in its layout; when
// y must leave NCHW, the pooled tensor is reordered (layout_bridge.h) and so is dy on its way back; and a ReLU
// absorbed by max pooling runs on the pooled output (ops::relu_*, elementwise, so in whatever layout y has).
// A BatchNorm2d's normalisation handed over (take_normalisation, bn_hand_over.h) goes to the fused kernels with x.
#include "mirror/nn/pool2d.h"

#include "mirror/nn/avg_pool2d.h"
#include "mirror/nn/max_pool2d.h"

#include "backend.h"
#include "bn_hand_over.h"
#include "layout_bridge.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"
#include "pool2d_kernels.h"

namespace mirror::nn {
namespace {
// The layout y leaves the layer in: x's blocked layout where the model allows it, else NCHW.
Layout output_layout(Layout x_layout, bool blocked_output) {
  return x_layout != Layout::kNchw && blocked_output ? x_layout : Layout::kNchw;
}
}  // namespace

Pool2d::Pool2d(Pool2dWindow w, PoolMode mode, Device device)
    : window_(w), mode_(mode), device_(device), y_({0}, device), dx_({0}, device), pooled_({0}, device),
      dy_pooled_({0}, device), y_to_nchw_(std::make_unique<detail::LayoutConverter>()),
      dy_to_x_layout_(std::make_unique<detail::LayoutConverter>()) {
  accepts_blocked_ = device.is_cpu();
  MIRROR_CHECK(w.kernel_h > 0 && w.kernel_w > 0 && w.stride_h > 0 && w.stride_w > 0 && w.pad_h >= 0 && w.pad_w >= 0 &&
                   2 * w.pad_h <= w.kernel_h && 2 * w.pad_w <= w.kernel_w,
               kInvalidArgument,
               "pooling needs a positive kernel and stride and 0 <= padding <= kernel / 2, got kernel="
                   << w.kernel_h << "x" << w.kernel_w << " stride=" << w.stride_h << "x" << w.stride_w
                   << " padding=" << w.pad_h << "x" << w.pad_w);
}

Pool2d::~Pool2d() = default;

Shape Pool2d::output_sample_shape(const Shape& s) const {
  MIRROR_CHECK(s.size() == 3 && s[0] > 0, kInvalidArgument, kind() << " needs samples [C, H, W], got " << to_string(s));
  const std::int64_t h = s[1] + 2 * window_.pad_h, w = s[2] + 2 * window_.pad_w;
  MIRROR_CHECK(h >= window_.kernel_h && w >= window_.kernel_w, kInvalidArgument,
               kind() << " window " << window_.kernel_h << "x" << window_.kernel_w << " does not fit samples "
                      << to_string(s) << " padded by " << window_.pad_h << "x" << window_.pad_w);
  return {s[0], (h - window_.kernel_h) / window_.stride_h + 1, (w - window_.kernel_w) / window_.stride_w + 1};
}

detail::Pool2dKernels& Pool2d::kernels_for(const Shape& x_shape, const Shape& y_shape, Layout layout,
                                           bool training) {
  if (kernels_ && kernels_shape_ == x_shape && kernels_layout_ == layout && kernels_training_ == training &&
      kernels_relu_ == relu_after_ && kernels_blocked_output_ == blocked_output_)
    return *kernels_;
  const detail::Pool2dProblem problem{
      window_, mode_, training, x_shape, y_shape, device_, layout, output_layout(layout, blocked_output_), relu_after_};
#if MIRROR_HAVE_CUDA
  kernels_ = device_.is_cuda() ? detail::make_pool2d_cuda(problem) : detail::make_pool2d_cpu(problem);
#else
  detail::require_cpu(device_);
  kernels_ = detail::make_pool2d_cpu(problem);
#endif
  kernels_shape_ = x_shape;
  kernels_layout_ = layout;
  kernels_training_ = training;
  kernels_relu_ = relu_after_;
  kernels_blocked_output_ = blocked_output_;
  return *kernels_;
}

const Tensor& Pool2d::forward(const Tensor& x) {
  MIRROR_CHECK(x.shape().size() == 4 && x.dim(0) > 0, kInvalidArgument,
               kind() << " needs a batch [N, C, H, W], got " << to_string(x.shape()));
  const Shape out = output_sample_shape({x.dim(1), x.dim(2), x.dim(3)});
  const Shape y_shape{x.dim(0), out[0], out[1], out[2]};
  detail::Pool2dKernels& k = kernels_for(x.shape(), y_shape, x.layout(), training());
  x_ = training() ? &x : nullptr;
  normalised_ = hand_over_ && hand_over_->pending;
  MIRROR_CHECK(!normalised_ || k.fused(), kInternal,
               kind() << " was handed a normalisation for a " << to_string(x.layout()) << " input it cannot apply");
  if (k.fused()) {  // y = [relu] pool(x) in the layout it leaves in, in one pass
    y_.resize(y_shape);
    y_.set_layout(output_layout(x.layout(), blocked_output_));
    if (normalised_)
      k.forward_normalised(x.data(), hand_over_->affine, y_.data());
    else
      k.forward(x.data(), y_.data());
    return y_;
  }
  const bool to_nchw = x.blocked() && !blocked_output_;
  Tensor& y = to_nchw ? y_x_layout_ : y_;  // y in x's layout
  y.resize(y_shape);
  y.set_layout(x.layout());
  if (relu_after_) {
    pooled_.resize(y_shape);
    pooled_.set_layout(x.layout());
    k.forward(x.data(), pooled_.data());
    ops::relu_forward(device_, pooled_.data(), y.data(), y.numel());
  } else {
    k.forward(x.data(), y.data());
  }
  if (to_nchw) y_to_nchw_->run(y, Layout::kNchw, y_);
  return y_;
}

bool Pool2d::take_normalisation(std::shared_ptr<detail::NormalisationHandOver> from) {
  if (mode_ != PoolMode::kMax || !detail::is_2x2_stride_2(window_) || !device_.is_cpu()) return false;
  hand_over_ = std::move(from);
  return true;
}

bool Pool2d::absorb_preceding_relu() {
  relu_after_ = mode_ == PoolMode::kMax;
  return relu_after_;
}

const Tensor* Pool2d::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(x_ != nullptr, kInternal, kind() << " backward needs a training forward before it");
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               kind() << " backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  MIRROR_CHECK(dy.layout() == y_.layout(), kInternal,
               kind() << " backward expects dy in layout " << to_string(y_.layout()) << ", got " << to_string(dy.layout()));
  if (!need_dx) return nullptr;
  dx_.resize(x_->shape());
  dx_.set_layout(x_->layout());
  if (normalised_) {  // the BatchNorm before reads dy (in x's blocked layout) and the winners; dx_ stays unwritten
    const Tensor* g = &dy;
    if (dy.layout() != x_->layout()) {
      dy_to_x_layout_->run(dy, x_->layout(), dy_x_layout_);
      g = &dy_x_layout_;
    }
    hand_over_->gradient = {g->data(), kernels_->normalised_winners(), y_.dim(2), y_.dim(3), x_->dim(3)};
    return &dx_;
  }
  if (kernels_->fused()) {
    kernels_->backward(x_->data(), y_.data(), dy.data(), dx_.data());
    return &dx_;
  }
  const Tensor* g = &dy;  // the pooling's output gradient, then in x's layout
  if (relu_after_) {
    dy_pooled_.resize(dy.shape());
    dy_pooled_.set_layout(dy.layout());
    ops::relu_backward(device_, y_.data(), dy.data(), dy_pooled_.data(), dy.numel());
    g = &dy_pooled_;
  }
  if (g->layout() != x_->layout()) {
    dy_to_x_layout_->run(*g, x_->layout(), dy_x_layout_);
    g = &dy_x_layout_;
  }
  // The pooling's own output, in x's layout (what cuDNN's backward reads; the CPU loops keep their winners).
  const Tensor& pooled = relu_after_ ? pooled_ : y_.layout() == x_->layout() ? y_ : y_x_layout_;
  kernels_->backward(x_->data(), pooled.data(), g->data(), dx_.data());
  return &dx_;
}

namespace {
// Settings of both pooling layers: kernel, stride (= kernel), padding (0), each a number or [h, w].
Pool2dWindow window_settings(const LayerSettings& s) {
  const auto [kh, kw] = s.pair("kernel", {0, 0}, 1);
  MIRROR_CHECK(kh >= 1 && kw >= 1, kInvalidArgument, s.where() << " needs a kernel (a number or [h, w])");
  const auto [sh, sw] = s.pair("stride", {kh, kw}, 1);
  const auto [ph, pw] = s.pair("padding", {0, 0}, 0);
  return {kh, kw, sh, sw, ph, pw};
}
}  // namespace

std::unique_ptr<Layer> MaxPool2d::create(const LayerArgs& args) {
  const Pool2dWindow w = window_settings(args.settings);
  return std::make_unique<MaxPool2d>(w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.pad_h, w.pad_w, args.device);
}

std::unique_ptr<Layer> AvgPool2d::create(const LayerArgs& args) {
  const Pool2dWindow w = window_settings(args.settings);
  return std::make_unique<AvgPool2d>(w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.pad_h, w.pad_w, args.device);
}

}  // namespace mirror::nn
