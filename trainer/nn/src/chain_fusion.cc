// chain_fusion.cc — chain_fusion.h: the patterns matched left to right, longest first.
#include "chain_fusion.h"

#include "mirror/nn/activation.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/batch_norm_max_pool.h"
#include "mirror/nn/pool2d.h"
#include "mirror/nn/residual.h"

namespace mirror::nn::detail {
namespace {

template <class T>
T* as(const std::vector<NamedLayer>& chain, std::size_t i) {
  return i < chain.size() ? dynamic_cast<T*>(chain[i].layer.get()) : nullptr;
}

template <class T>
std::unique_ptr<T> take(NamedLayer& l) {
  return std::unique_ptr<T>(static_cast<T*>(l.layer.release()));
}

// batchnorm2d [relu] maxpool2d at i: how many layers the pattern covers (0: none).
std::size_t bn_pool_span(const std::vector<NamedLayer>& chain, std::size_t i) {
  auto* bn = as<BatchNorm2d>(chain, i);
  if (bn == nullptr) return 0;
  const bool relu = as<ReLU>(chain, i + 1) != nullptr;
  auto* pool = as<Pool2d>(chain, relu ? i + 2 : i + 1);
  return pool != nullptr && BatchNormMaxPool::can_fuse(*bn, *pool) ? (relu ? 3 : 2) : 0;
}

// A layer followed by a ReLU it can apply itself: the layer's pattern (true when it now applies it).
bool absorbs_following_relu(Layer* layer) {
  if (auto* bn = dynamic_cast<BatchNorm2d*>(layer)) return bn->absorb_following_relu();
  if (auto* block = dynamic_cast<Residual*>(layer)) return block->absorb_following_relu();
  return false;
}

}  // namespace

std::vector<FusedLayer> fuse_chain(std::vector<NamedLayer> chain) {
  std::vector<FusedLayer> out;
  for (std::size_t i = 0; i < chain.size();) {
    if (const std::size_t span = bn_pool_span(chain, i)) {
      std::vector<std::string> from;
      for (std::size_t k = i; k < i + span; ++k) from.push_back(chain[k].name);
      auto bn = take<BatchNorm2d>(chain[i]);
      auto pool = take<Pool2d>(chain[i + span - 1]);
      out.push_back({{from.front(), std::make_unique<BatchNormMaxPool>(std::move(bn), span == 3, std::move(pool))}, from});
      i += span;
      continue;
    }
    if (as<ReLU>(chain, i) != nullptr) {
      if (auto* pool = as<Pool2d>(chain, i + 1); pool != nullptr && pool->absorb_preceding_relu()) {
        std::vector<std::string> from{chain[i].name, chain[i + 1].name};
        out.push_back({std::move(chain[i + 1]), std::move(from)});
        i += 2;
        continue;
      }
    }
    if (as<ReLU>(chain, i + 1) != nullptr && absorbs_following_relu(chain[i].layer.get())) {
      std::vector<std::string> from{chain[i].name, chain[i + 1].name};
      out.push_back({std::move(chain[i]), std::move(from)});
      i += 2;
      continue;
    }
    std::vector<std::string> from{chain[i].name};
    out.push_back({std::move(chain[i]), std::move(from)});
    ++i;
  }
  return out;
}

namespace {

// Every node's inputs with the default (the previous node; the model's input for the first) made explicit.
std::vector<std::vector<std::ptrdiff_t>> resolved_inputs(const std::vector<GraphNode>& nodes) {
  std::vector<std::vector<std::ptrdiff_t>> inputs;
  for (std::size_t n = 0; n < nodes.size(); ++n)
    inputs.push_back(nodes[n].inputs.empty() ? std::vector<std::ptrdiff_t>{static_cast<std::ptrdiff_t>(n) - 1}
                                             : nodes[n].inputs);
  return inputs;
}

}  // namespace

std::vector<std::string> fuse_graph(ModelGraph& graph) {
  std::vector<GraphNode>& nodes = graph.nodes;
  const auto inputs = resolved_inputs(nodes);
  // A graph whose wiring is broken is left as it is, for the model to name what is wrong.
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const std::ptrdiff_t k = static_cast<std::ptrdiff_t>(n);
    for (std::ptrdiff_t i : inputs[n])
      if (i < GraphNode::kModelInput || i >= k) return std::vector<std::string>(nodes.size());
    if (nodes[n].tied_to < GraphNode::kOwnParameters || nodes[n].tied_to >= k || !nodes[n].layer)
      return std::vector<std::string>(nodes.size());
  }
  if (graph.output >= nodes.size()) return std::vector<std::string>(nodes.size());
  std::vector<std::size_t> uses(nodes.size(), 0);
  for (const auto& in : inputs)
    for (std::ptrdiff_t i : in)
      if (i >= 0) ++uses[static_cast<std::size_t>(i)];
  ++uses[graph.output];
  auto plain_link = [&](std::size_t k) {
    return k + 1 < nodes.size() && uses[k] == 1 && k != graph.output &&
           inputs[k + 1] == std::vector<std::ptrdiff_t>{static_cast<std::ptrdiff_t>(k)} &&
           nodes[k].tied_to == GraphNode::kOwnParameters && nodes[k + 1].tied_to == GraphNode::kOwnParameters;
  };
  std::vector<std::ptrdiff_t> new_index(nodes.size(), -1);
  auto remap = [&](std::ptrdiff_t old) { return old < 0 ? old : new_index[static_cast<std::size_t>(old)]; };
  std::vector<GraphNode> out;
  std::vector<std::string> notes;
  for (std::size_t start = 0; start < nodes.size();) {
    std::size_t end = start;
    while (plain_link(end)) ++end;
    std::vector<NamedLayer> run;
    for (std::size_t k = start; k <= end; ++k) run.push_back({std::move(nodes[k].name), std::move(nodes[k].layer)});
    std::size_t old = start;
    for (FusedLayer& f : fuse_chain(std::move(run))) {
      GraphNode node{std::move(f.layer.name), std::move(f.layer.layer)};
      if (old == start) {
        for (std::ptrdiff_t i : inputs[start]) node.inputs.push_back(remap(i));
        node.tied_to = remap(nodes[start].tied_to);
      } else {
        node.inputs = {static_cast<std::ptrdiff_t>(out.size()) - 1};
      }
      for (std::size_t k = 0; k < f.from.size(); ++k) new_index[old++] = static_cast<std::ptrdiff_t>(out.size());
      std::string note;
      for (std::size_t k = 0; f.from.size() > 1 && k < f.from.size(); ++k) note += (k ? ", " : "") + f.from[k];
      notes.push_back(std::move(note));
      out.push_back(std::move(node));
    }
    start = end + 1;
  }
  graph.output = static_cast<std::size_t>(new_index[graph.output]);
  nodes = std::move(out);
  return notes;
}

}  // namespace mirror::nn::detail
