// chain_fusion.h (private) — fusions a chain of layers (a model, a residual block's branches) makes once, when
// it is built: a ReLU right before a layer that can apply it itself (Layer::absorb_preceding_relu: max
// pooling, on its smaller output) runs as the identity; so does a ReLU left after that whose preceding layer can
// apply it to its output (Layer::absorb_following_relu: BatchNorm2d, Residual). Results stay exactly the same;
// the ReLU's passes go.
#pragma once

#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn::detail {

void absorb_relus(const std::vector<Layer*>& chain);

}  // namespace mirror::nn::detail
