// chain_fusion.h (private) — the fusion pass over a chain of layers (a run of plainly linked nodes of a model, a
// residual block's branches), made once, when it is built, unless --fusion off: a ReLU right before a max
// pooling (Pool2d::absorb_preceding_relu: applied to its smaller output) runs as the identity; so does a ReLU left
// after a layer that can apply it to its output (BatchNorm2d, Residual: absorb_following_relu). Then a BatchNorm2d followed by a
// 2×2 max pooling (that ReLU between them, absorbed by the pooling, or none) hands its normalisation to the
// pooling (bn_hand_over.h), so the normalised tensor is never written nor its gradient. Last, of two residual
// blocks in a row whose first applies the ReLU between them, the second masks its input gradient in its final add
// and the first no longer masks it again (Residual::mask_input_gradient). Results stay exactly the same; the
// passes go.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn::detail {

// One fusion made, for the layer table: chain[layer]'s work is done by (or together with) chain[partner].
struct FusionNote {
  std::size_t layer;
  std::size_t partner;
  std::string what;  // "applied by", "normalises in the pass of", ...: followed by the partner's name
};

// Every fusion above, in that order; what was fused.
std::vector<FusionNote> fuse_chain(const std::vector<Layer*>& chain);

void absorb_relus(const std::vector<Layer*>& chain, std::vector<FusionNote>& notes);
void hand_normalisations_to_pooling(const std::vector<Layer*>& chain, std::vector<FusionNote>& notes);
void mask_between_residual_blocks(const std::vector<Layer*>& chain, std::vector<FusionNote>& notes);

}  // namespace mirror::nn::detail
