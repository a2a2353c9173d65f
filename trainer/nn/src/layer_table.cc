// layer_table.cc — THE table of layer types: one row per type. Adding a layer: its own file (the class
// with a static create(const LayerArgs&)), its include here and one row below. Rows with a null factory
// are types of the model vocabulary (docs/model-format.md) whose layers are not in this build yet: a model
// that uses one is refused with a message that says so.
#include "mirror/nn/activation.h"
#include "mirror/nn/dropout.h"
#include "mirror/nn/flatten.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/residual.h"

namespace mirror::nn {

const std::vector<LayerType>& layer_types() {
  static const std::vector<LayerType> table = {
      {"linear", &Linear::create, "fully connected: out_features (a number or \"classes\"), bias"},
      {"relu", &ReLU::create, "max(x, 0)"},
      {"flatten", &Flatten::create, "[C, H, W] -> [C*H*W]"},
      {"dropout", &Dropout::create, "inverted dropout with probability p, masks keyed by seed, step and sample"},
      {"residual", &Residual::create, "body(x) + shortcut(x); an empty shortcut is the identity"},
      {"conv2d", nullptr, "2-D convolution: out_channels, kernel, stride, padding, bias; comes with the CNN layers"},
      {"maxpool2d", nullptr, "max pooling: kernel, stride; comes with the CNN layers"},
      {"avgpool2d", nullptr, "average pooling: kernel, stride, padding; comes with the CNN layers"},
      {"global_avgpool", nullptr, "mean over H and W; comes with the CNN layers"},
      {"batchnorm2d", nullptr, "batch normalisation per channel (SyncBN over ranks); comes with the CNN layers"},
  };
  return table;
}

}  // namespace mirror::nn
