// chain_fusion.cc — chain_fusion.h.
#include "chain_fusion.h"

#include <memory>

#include "bn_hand_over.h"
#include "mirror/nn/activation.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/pool2d.h"
#include "mirror/nn/residual.h"

namespace mirror::nn::detail {

std::vector<FusionNote> fuse_chain(const std::vector<Layer*>& chain) {
  std::vector<FusionNote> notes;
  absorb_relus(chain, notes);
  hand_normalisations_to_pooling(chain, notes);
  mask_between_residual_blocks(chain, notes);
  return notes;
}

namespace {

// The layers that can apply a ReLU after them in their own output pass: BatchNorm2d and Residual (CPU).
bool absorb_following_relu(Layer* layer) {
  if (auto* bn = dynamic_cast<BatchNorm2d*>(layer)) return bn->absorb_following_relu();
  if (auto* block = dynamic_cast<Residual*>(layer)) return block->absorb_following_relu();
  return false;
}

}  // namespace

void absorb_relus(const std::vector<Layer*>& chain, std::vector<FusionNote>& notes) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* relu = dynamic_cast<ReLU*>(chain[i]);
    auto* pool = dynamic_cast<Pool2d*>(chain[i + 1]);
    if (relu != nullptr && !relu->absorbed() && pool != nullptr && pool->absorb_preceding_relu()) {
      relu->set_absorbed(true);
      notes.push_back({i, i + 1, "applied after the max by"});
    }
  }
  // Pooling first: it applies the ReLU to a smaller tensor than the layer before would.
  for (std::size_t i = 1; i < chain.size(); ++i) {
    auto* relu = dynamic_cast<ReLU*>(chain[i]);
    if (relu != nullptr && !relu->absorbed() && absorb_following_relu(chain[i - 1])) {
      relu->set_absorbed(true);
      notes.push_back({i, i - 1, "applied in the output pass of"});
    }
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

void hand_normalisations_to_pooling(const std::vector<Layer*>& chain, std::vector<FusionNote>& notes) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(chain[i]);
    // A ReLU between them is the pooling's by now (absorbed before a max pooling); any other one stops the fusion.
    auto* pool = bn == nullptr ? nullptr : dynamic_cast<Pool2d*>(consumer_of(chain, i));
    if (pool == nullptr) continue;
    auto hand_over = std::make_shared<NormalisationHandOver>();
    hand_over->pooled_gradient = true;
    if (!pool->take_normalisation(hand_over)) continue;
    if (!bn->hand_normalisation_over(hand_over)) {
      pool->take_normalisation(nullptr);
      continue;
    }
    for (std::size_t p = i + 1; p < chain.size(); ++p)
      if (chain[p] == pool) notes.push_back({i, p, "normalises as it is read by"});
  }
}

void mask_between_residual_blocks(const std::vector<Layer*>& chain, std::vector<FusionNote>& notes) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    auto* first = dynamic_cast<Residual*>(chain[i]);
    if (first == nullptr || !first->applies_relu()) continue;
    auto* second = dynamic_cast<Residual*>(consumer_of(chain, i));  // the ReLU between them is first's
    if (second == nullptr) continue;
    second->mask_input_gradient();
    first->gradient_arrives_masked();
    for (std::size_t p = i + 1; p < chain.size(); ++p)
      if (chain[p] == second) notes.push_back({i, p, "takes its gradient masked by"});
  }
}

}  // namespace mirror::nn::detail
