// layer_table.cc — THE table of layer types: one row per type. Adding a layer: its own file (the class
// with a static create(const LayerArgs&)), its include here and one row below. A row with a null factory
// would be a type of the model vocabulary (docs/model-format.md) whose layer is not in this build: a model
// that uses one is refused with a message that says so.
#include "mirror/nn/activation.h"
#include "mirror/nn/add.h"
#include "mirror/nn/avg_pool2d.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/causal_self_attention.h"
#include "mirror/nn/concat.h"
#include "mirror/nn/conv2d.h"
#include "mirror/nn/dropout.h"
#include "mirror/nn/embedding.h"
#include "mirror/nn/flatten.h"
#include "mirror/nn/gelu.h"
#include "mirror/nn/global_avg_pool2d.h"
#include "mirror/nn/layer_norm.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/max_pool2d.h"
#include "mirror/nn/position_embedding.h"
#include "mirror/nn/residual.h"

namespace mirror::nn {

const std::vector<LayerType>& layer_types() {
  static const std::vector<LayerType> table = {
      {"linear", &Linear::create, "fully connected: out_features (a number or \"classes\"), bias"},
      {"relu", &ReLU::create, "max(x, 0)"},
      {"flatten", &Flatten::create, "[C, H, W] -> [C*H*W]"},
      {"dropout", &Dropout::create, "inverted dropout with probability p, masks keyed by seed, step and sample"},
      {"residual", &Residual::create, "body(x) + shortcut(x); an empty shortcut is the identity"},
      {"conv2d", &Conv2d::create, "2-D convolution: out_channels, kernel, stride, padding, bias (oneDNN / cuDNN)"},
      {"maxpool2d", &MaxPool2d::create, "max pooling: kernel, stride (= kernel), padding"},
      {"avgpool2d", &AvgPool2d::create, "average pooling, padded zeros counted: kernel, stride (= kernel), padding"},
      {"global_avgpool", &GlobalAvgPool2d::create, "mean over H and W: [C, H, W] -> [C]"},
      {"batchnorm2d", &BatchNorm2d::create, "batch normalisation per channel (SyncBN over ranks): momentum, eps"},
      {"add", &Add::create, "merge: the elementwise sum of two or more inputs of one shape"},
      {"embedding", &Embedding::create, "token ids [T] (int32) to vectors [T, C]: vocab (a number or \"classes\"), channels"},
      {"layernorm", &LayerNorm::create, "normalisation over the last axis (GPT-2's ln): eps (1e-5); weight 1, bias 0"},
      {"gelu", &Gelu::create, "GELU, tanh approximation (GPT-2's gelu_new)"},
      {"position_embedding", &PositionEmbedding::create,
       "learned positions added to [T, C] sequences (GPT-2's wpe): context (the model's longest window), init_std"},
      {"causal_self_attention", &CausalSelfAttention::create,
       "GPT-2 attention on [T, C]: heads; fused qkv projection, causal softmax(q·kᵀ/√d)·v, output projection"},
      {"concat", &Concat::create, "merge: two or more inputs joined along the feature axis (F, C of [C,H,W], last of [T,C])"},
  };
  return table;
}

}  // namespace mirror::nn
