// chain_fusion.h (private) — fusions a chain of layers (a model, a residual block's branches) makes once, when
// it is built: a ReLU right before a layer that can apply it itself (Layer::absorb_preceding_relu: max
// pooling, on its smaller output) runs as the identity; so does a ReLU left after that whose preceding layer can
// apply it to its output (Layer::absorb_following_relu: BatchNorm2d, Residual). Then a BatchNorm2d followed by a
// 2×2 max pooling (that ReLU between them, absorbed by the pooling, or none) hands its normalisation to the
// pooling (bn_hand_over.h), so the normalised tensor is never written nor its gradient. Last, of two residual
// blocks in a row whose first applies the ReLU between them, the second masks its input gradient in its final add
// and the first no longer masks it again (Residual::mask_input_gradient). Results stay exactly the same; the
// passes go.
#pragma once

#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn::detail {

// Every fusion above, in that order.
void fuse_chain(const std::vector<Layer*>& chain);

void absorb_relus(const std::vector<Layer*>& chain);
void hand_normalisations_to_pooling(const std::vector<Layer*>& chain);
void mask_between_residual_blocks(const std::vector<Layer*>& chain);

}  // namespace mirror::nn::detail
