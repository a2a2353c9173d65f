// merge.cc — mirror/nn/merge.h: the refusals of a merge's single-input forms.
#include "mirror/nn/merge.h"

#include "mirror/error.h"

namespace mirror::nn {

const Tensor* Merge::backward(const Tensor&, GradMode, bool, const LayerGradReady&) {
  MIRROR_THROW(kInvalidArgument, kind() << " merges two or more inputs; its backward gives one gradient per input");
}

void Merge::check_input_count(std::size_t count) const {
  MIRROR_CHECK(count >= 2, kInvalidArgument,
               kind() << " merges two or more inputs, got " << count << "; name them in \"inputs\"");
}

}  // namespace mirror::nn
