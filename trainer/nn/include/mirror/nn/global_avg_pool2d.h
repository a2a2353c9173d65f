// mirror/nn/global_avg_pool2d.h — global average pooling: y[n,c] = mean of x[n,c,:,:]. The output sample is
// [C] (not [C,1,1]), so a Linear follows directly without a Flatten; as PyTorch's
// AdaptiveAvgPool2d(1) followed by flatten(1). Backward: dx[n,c,h,w] = dy[n,c] / (H·W). Plain loops on the
// CPU, a CUDA kernel on the GPU (a mean needs no library; global_avg_pool2d.cc).
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;  // mirror/nn/layer_registry.h

class GlobalAvgPool2d final : public Layer {
 public:
  // kInvalidArgument on a CUDA device in a CPU-only build.
  explicit GlobalAvgPool2d(Device device = Device{});

  std::string kind() const override { return "global_avgpool"; }
  // The factory of the layer table (layer_table.cc): settings from a model description (docs/model-format.md).
  static std::unique_ptr<Layer> create(const LayerArgs& args);
  // [C, H, W] -> [C].
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  // Blocked inputs on the CPU (the output [N, C] is plain either way; dx in x's layout).
  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  Device device_;
  Shape x_shape_;
  Layout x_layout_ = Layout::kNchw;
  Tensor y_, dx_;
};

}  // namespace mirror::nn
