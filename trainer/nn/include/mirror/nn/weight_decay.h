// mirror/nn/weight_decay.h — which parameters take weight decay. By the common convention (PyTorch's
// ResNet recipes, timm's "no weight decay on norm and bias", Keras applications' kernel-only regularizers)
// a normalisation layer's scale and shift (BatchNorm's γ, β) and every bias take none: decaying them pulls
// γ towards 0 and shifts towards 0 for no regularising effect. Here that is a set of flat-buffer ranges
// handed to Optimizer::set_decay_exempt.
#pragma once

#include <vector>

#include "mirror/nn/model.h"
#include "mirror/nn/optimizer.h"

namespace mirror::nn {

// True when `p` takes no weight decay under the convention: a normalisation parameter
// (ParamInfo::normalization) or a name ending in ".bias".
bool decay_exempt(const ParamInfo& p);

// The exempt parameters' elements as sorted, disjoint ranges of the flat buffer (neighbours merged).
std::vector<Optimizer::Range> decay_exempt_ranges(const std::vector<ParamInfo>& params);

}  // namespace mirror::nn
