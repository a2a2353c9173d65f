// weight_decay.cc — mirror/nn/weight_decay.h: the parameters exempt from weight decay, as flat ranges.
#include "mirror/nn/weight_decay.h"

#include <string_view>

namespace mirror::nn {

bool decay_exempt(const ParamInfo& p) {
  constexpr std::string_view kBias = ".bias";
  const std::string_view name = p.name;
  return p.normalization || (name.size() >= kBias.size() && name.substr(name.size() - kBias.size()) == kBias);
}

std::vector<Optimizer::Range> decay_exempt_ranges(const std::vector<ParamInfo>& params) {
  std::vector<Optimizer::Range> ranges;
  for (const ParamInfo& p : params) {  // in offset order (the model's layout)
    if (!decay_exempt(p) || p.numel == 0) continue;
    if (!ranges.empty() && ranges.back().end == p.offset) {
      ranges.back().end += p.numel;
    } else {
      ranges.push_back({p.offset, p.offset + p.numel});
    }
  }
  return ranges;
}

}  // namespace mirror::nn
