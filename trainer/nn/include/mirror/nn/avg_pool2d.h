// mirror/nn/avg_pool2d.h — average pooling over a kh×kw window with count_include_pad = true (PyTorch's
// nn.AvgPool2d default, floor mode): y = sum of x over the window / (kh·kw), padded positions counting as
// zeros. Backward spreads dy / (kh·kw) over the window. CPU loops or cuDNN (pool2d.h, pool2d.cc).
#pragma once

#include "mirror/nn/pool2d.h"

namespace mirror::nn {

struct LayerArgs;  // mirror/nn/layer_registry.h

class AvgPool2d final : public Pool2d {
 public:
  AvgPool2d(std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t stride_h, std::int64_t stride_w,
            std::int64_t pad_h, std::int64_t pad_w, Device device = Device{})
      : Pool2d({kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}, PoolMode::kAverageIncludePad, device) {}
  std::string kind() const override { return "avgpool2d"; }
  // The factory of the layer table (layer_table.cc): settings from a model description (docs/model-format.md).
  static std::unique_ptr<Layer> create(const LayerArgs& args);
};

}  // namespace mirror::nn
