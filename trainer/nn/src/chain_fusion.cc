// chain_fusion.cc — chain_fusion.h.
#include "chain_fusion.h"

#include <memory>

#include "bn_hand_over.h"
#include "mirror/nn/activation.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/pool2d.h"
#include "mirror/nn/residual.h"

namespace mirror::nn::detail {

void fuse_chain(const std::vector<Layer*>& chain) {
  absorb_relus(chain);
  hand_normalisations_to_pooling(chain);
  mask_between_residual_blocks(chain);
}

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

namespace {

// The layer that consumes chain[i]'s output once the ReLUs are absorbed: chain[i + 1], or the one after it when
// chain[i + 1] is an absorbed ReLU (the identity now); null at the end of the chain.
Layer* consumer_of(const std::vector<Layer*>& chain, std::size_t i) {
  std::size_t next = i + 1;
  if (next < chain.size())
    if (auto* relu = dynamic_cast<ReLU*>(chain[next]); relu != nullptr && relu->absorbed()) ++next;
  return next < chain.size() ? chain[next] : nullptr;
}

}  // namespace

void hand_normalisations_to_pooling(const std::vector<Layer*>& chain) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(chain[i]);
    // A ReLU between them is the pooling's by now (absorbed before a max pooling); any other one stops the fusion.
    auto* pool = bn == nullptr ? nullptr : dynamic_cast<Pool2d*>(consumer_of(chain, i));
    if (pool == nullptr) continue;
    auto hand_over = std::make_shared<NormalisationHandOver>();
    hand_over->pooled_gradient = true;
    if (pool->take_normalisation(hand_over) && !bn->hand_normalisation_over(hand_over))
      pool->take_normalisation(nullptr);
  }
}

void mask_between_residual_blocks(const std::vector<Layer*>& chain) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* first = dynamic_cast<Residual*>(chain[i]);
    if (first == nullptr || !first->applies_relu()) continue;
    auto* second = dynamic_cast<Residual*>(consumer_of(chain, i));  // the ReLU between them is first's
    if (second == nullptr) continue;
    second->mask_input_gradient();
    first->gradient_arrives_masked();
  }
}

}  // namespace mirror::nn::detail
