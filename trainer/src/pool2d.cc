// pool2d.cc — mirror/train/pool2d.h on the CPU: oneDNN pooling forward (training keeps max pooling's
// workspace, the index of each window's winner) and backward, over plain NCHW buffers. Primitives are built
// per input shape and training flag, and rebuilt when either changes.
#include "mirror/train/pool2d.h"

#include "dnnl_cpu.h"
#include "mirror/error.h"

namespace mirror::train {

namespace dc = detail::dnnl_cpu;

struct Pool2d::Primitives {
  Shape x_shape;
  bool training = false;
  dnnl::memory::desc src, dst;
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;  // built in training only
  dnnl::memory workspace;           // max pooling in training only
};

Pool2d::Pool2d(Pool2dWindow w, PoolMode mode, Device device)
    : window_(w), mode_(mode), device_(device), y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(w.kernel_h > 0 && w.kernel_w > 0 && w.stride_h > 0 && w.stride_w > 0 && w.pad_h >= 0 && w.pad_w >= 0 &&
                   2 * w.pad_h <= w.kernel_h && 2 * w.pad_w <= w.kernel_w,
               kInvalidArgument,
               "pooling needs a positive kernel and stride and 0 <= padding <= kernel / 2, got kernel="
                   << w.kernel_h << "x" << w.kernel_w << " stride=" << w.stride_h << "x" << w.stride_w
                   << " padding=" << w.pad_h << "x" << w.pad_w);
  MIRROR_CHECK(device.is_cpu(), kInvalidArgument, "pooling on " << to_string(device) << ": only the CPU is implemented");
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

Pool2d::Primitives& Pool2d::primitives_for(const Shape& x_shape, bool training) {
  if (prims_ && prims_->x_shape == x_shape && prims_->training == training) return *prims_;
  const Shape out = output_sample_shape({x_shape[1], x_shape[2], x_shape[3]});
  auto p = std::make_unique<Primitives>();
  p->x_shape = x_shape;
  p->training = training;
  dc::run(kind(), [&] {
    p->src = dc::plain({x_shape[0], x_shape[1], x_shape[2], x_shape[3]}, dc::tag::nchw);
    p->dst = dc::plain({x_shape[0], out[0], out[1], out[2]}, dc::tag::nchw);
    const auto algo = mode_ == PoolMode::kMax ? dnnl::algorithm::pooling_max
                                              : dnnl::algorithm::pooling_avg_include_padding;
    const dc::dims kernel{window_.kernel_h, window_.kernel_w}, strides{window_.stride_h, window_.stride_w},
        pad{window_.pad_h, window_.pad_w};
    const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    const auto fwd_pd = dnnl::pooling_forward::primitive_desc(
        dnnl::pooling_forward::desc(prop, algo, p->src, p->dst, strides, kernel, pad, pad), dc::engine());
    p->forward = dnnl::pooling_forward(fwd_pd);
    if (training) {
      p->backward = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
          dnnl::pooling_backward::desc(algo, p->src, p->dst, strides, kernel, pad, pad), dc::engine(), fwd_pd));
      if (mode_ == PoolMode::kMax) p->workspace = dnnl::memory(fwd_pd.workspace_desc(), dc::engine());
    }
  });
  prims_ = std::move(p);
  return *prims_;
}

const Tensor& Pool2d::forward(const Tensor& x) {
  MIRROR_CHECK(x.shape().size() == 4 && x.dim(0) > 0, kInvalidArgument,
               kind() << " needs a batch [N, C, H, W], got " << to_string(x.shape()));
  const Shape out = output_sample_shape({x.dim(1), x.dim(2), x.dim(3)});
  Primitives& p = primitives_for(x.shape(), training());
  y_.resize({x.dim(0), out[0], out[1], out[2]});
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dc::wrap(p.src, x.data())},
                                             {DNNL_ARG_DST, dc::wrap(p.dst, y_.data())}};
  if (p.workspace) args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
  dc::run(kind() + " forward", [&] { dc::execute(p.forward, args); });
  have_workspace_ = training();
  return y_;
}

const Tensor* Pool2d::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(prims_ && have_workspace_, kInternal, kind() << " backward needs a training forward before it");
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               kind() << " backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  if (!need_dx) return nullptr;
  Primitives& p = *prims_;
  dx_.resize(p.x_shape);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, dc::wrap(p.dst, dy.data())},
                                             {DNNL_ARG_DIFF_SRC, dc::wrap(p.src, dx_.data())}};
  if (p.workspace) args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
  dc::run(kind() + " backward", [&] { dc::execute(p.backward, args); });
  return &dx_;
}

}  // namespace mirror::train
