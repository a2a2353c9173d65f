// mirror/nn/max_pool2d.h — max pooling over a kh×kw window (PyTorch's nn.MaxPool2d, floor mode, dilation
// 1): y[n,c,i,j] = max of x over the window at (i·sh − ph, j·sw − pw); padding never wins. Backward sends each
// output gradient to the element that won its window. CPU loops (NCHW or blocked) or cuDNN (pool2d.h, pool2d.cc).
#pragma once

#include "mirror/nn/pool2d.h"

namespace mirror::nn {

struct LayerArgs;  // mirror/nn/layer_registry.h

class MaxPool2d final : public Pool2d {
 public:
  MaxPool2d(std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t stride_h, std::int64_t stride_w,
            std::int64_t pad_h, std::int64_t pad_w, Device device = Device{})
      : Pool2d({kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}, PoolMode::kMax, device) {}
  std::string kind() const override { return applies_relu() ? "relu+maxpool2d" : "maxpool2d"; }
  // The factory of the layer table (layer_table.cc): settings from a model description (docs/model-format.md).
  static std::unique_ptr<Layer> create(const LayerArgs& args);
};

}  // namespace mirror::nn
