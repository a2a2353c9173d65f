// chain_fusion.cc — chain_fusion.h.
#include "chain_fusion.h"

#include "mirror/nn/activation.h"

namespace mirror::nn::detail {

void absorb_relus(const std::vector<Layer*>& chain) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* relu = dynamic_cast<ReLU*>(chain[i]);
    if (relu != nullptr && !relu->absorbed() && chain[i + 1]->absorb_preceding_relu()) relu->set_absorbed(true);
  }
  // Pooling first: it applies the ReLU to a smaller tensor than the layer before would.
  for (std::size_t i = 1; i < chain.size(); ++i) {
    auto* relu = dynamic_cast<ReLU*>(chain[i]);
    if (relu != nullptr && !relu->absorbed() && dynamic_cast<ReLU*>(chain[i - 1]) == nullptr &&
        chain[i - 1]->absorb_following_relu())
      relu->set_absorbed(true);
  }
}

}  // namespace mirror::nn::detail
