// chain_fusion.h (private) — the fusion pass over a chain of layers (a run of plainly linked nodes of a model, a
// residual block's branches), made once, when the model is built, unless --fusion off. It replaces known
// patterns with fused layers, each one layer of the model from then on:
//   batchnorm2d → [relu] → maxpool2d 2×2 stride 2 (CPU)  →  BatchNormMaxPool (batch_norm_max_pool.h): the pooling
//       normalises as it reads, so the normalised tensor is never written (named as the BatchNorm);
//   relu → maxpool2d  →  the max pooling applying the ReLU to its output (max∘relu = relu∘max exactly, on the
//       smaller tensor; kind relu+maxpool2d, named as the pooling);
//   batchnorm2d → relu, residual → relu (CPU)  →  the layer applying the ReLU in its own output pass and masking
//       dy in backward (kind batchnorm2d+relu, residual+relu; named as that layer).
// The fused layers compute the same operations in the same order: results stay the same within float rounding.
#pragma once

#include <string>
#include <vector>

#include "mirror/nn/model.h"

namespace mirror::nn::detail {

// One layer of a fused chain and the names of the layers it stands for (one: not fused).
struct FusedLayer {
  NamedLayer layer;
  std::vector<std::string> from;
};

// The chain with every pattern above replaced, in order.
std::vector<FusedLayer> fuse_chain(std::vector<NamedLayer> chain);

// The pass over every run of plainly linked nodes of `graph` (each node of the run but the first takes the
// previous one's output alone, and nothing else takes it), nodes renumbered, inputs, ties and the output
// following. Returns, per node of the result, the names of the layers it stands for, ", "-joined, where more
// than one ("" elsewhere).
std::vector<std::string> fuse_graph(ModelGraph& graph);

}  // namespace mirror::nn::detail
