// layout_bridge.cc — layout_bridge.h: one oneDNN reorder primitive per converter, over Mirror's own buffers.
#include "layout_bridge.h"

#include "dnnl_cpu.h"
#include "mirror/error.h"

namespace mirror::nn::detail {

namespace dc = dnnl_cpu;

struct LayoutConverter::Reorder {
  Shape shape;
  Layout from, to;
  dnnl::memory::desc from_md, to_md;
  dnnl::reorder primitive;
};

LayoutConverter::LayoutConverter() = default;
LayoutConverter::~LayoutConverter() = default;
LayoutConverter::LayoutConverter(LayoutConverter&&) noexcept = default;
LayoutConverter& LayoutConverter::operator=(LayoutConverter&&) noexcept = default;

void LayoutConverter::run(const Tensor& x, Layout to, Tensor& out) {
  MIRROR_CHECK(x.device().is_cpu() && x.shape().size() == 4, kInternal,
               "layout conversion needs a 4-D CPU tensor, got " << to_string(x.shape()) << " on "
                                                                << to_string(x.device()));
  out.resize(x.shape());
  out.set_layout(to);
  if (x.layout() == to) {
    copy_device_to_device(x.device(), out.data(), x.data(), static_cast<std::size_t>(x.numel()) * sizeof(float));
    return;
  }
  dc::run("layout conversion", [&] {
    if (!reorder_ || reorder_->shape != x.shape() || reorder_->from != x.layout() || reorder_->to != to) {
      const dc::dims d(x.shape().begin(), x.shape().end());
      auto r = std::make_unique<Reorder>();
      r->shape = x.shape();
      r->from = x.layout();
      r->to = to;
      r->from_md = dc::plain(d, dc::tag_of(x.layout()));
      r->to_md = dc::plain(d, dc::tag_of(to));
      r->primitive = dnnl::reorder(dnnl::reorder::primitive_desc(dc::engine(), r->from_md, dc::engine(), r->to_md));
      reorder_ = std::move(r);
    }
    dnnl::memory src = dc::wrap(reorder_->from_md, x.data()), dst = dc::wrap(reorder_->to_md, out.data());
    reorder_->primitive.execute(dc::stream(), src, dst);
    dc::stream().wait();
  });
}

const Tensor& LayoutBridge::input(const Tensor& x, bool accepts_blocked) {
  from_ = x.layout();
  converted_ = x.blocked() && !accepts_blocked;
  if (!converted_) return x;
  to_plain_.run(x, Layout::kNchw, x_plain_);
  return x_plain_;
}

const Tensor* LayoutBridge::gradient(const Tensor* dx) {
  if (dx == nullptr || !converted_) return dx;
  to_blocked_.run(*dx, from_, dx_blocked_);
  return &dx_blocked_;
}

}  // namespace mirror::nn::detail
