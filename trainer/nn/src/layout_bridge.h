// layout_bridge.h (private) — moving CPU tensors between NCHW and the channel-blocked layouts (tensor.h's
// Layout) with oneDNN reorders: LayoutConverter (one reorder, rebuilt only when the shape or the layouts
// change) and LayoutBridge, what a chain of layers (model.cc, residual.cc) puts in front of each layer so that
// a layer that does not accept blocked tensors gets NCHW and hands back dx in the layout its input came in.
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn::detail {

class LayoutConverter {
 public:
  LayoutConverter();
  ~LayoutConverter();
  LayoutConverter(LayoutConverter&&) noexcept;
  LayoutConverter& operator=(LayoutConverter&&) noexcept;
  // out = x in layout `to` (out is resized to x's shape; x and out must not overlap). CPU only.
  void run(const Tensor& x, Layout to, Tensor& out);

 private:
  struct Reorder;
  std::unique_ptr<Reorder> reorder_;
};

class LayoutBridge {
 public:
  // What to hand to a layer as its input: x itself, or x in NCHW when x is blocked and !accepts_blocked.
  const Tensor& input(const Tensor& x, bool accepts_blocked);
  // The layer's dx (may be null) back in the layout of the x that input() was last given.
  const Tensor* gradient(const Tensor* dx);

 private:
  Layout from_ = Layout::kNchw;
  bool converted_ = false;
  Tensor x_plain_, dx_blocked_;
  LayoutConverter to_plain_, to_blocked_;
};

}  // namespace mirror::nn::detail
