// counting_layer.h — a test layer with non-gradient buffers, to check their plumbing through the model, the
// checkpoint and a resume without BatchNorm: the identity on its input (CPU only), counting in its buffers
// "forwards" [1] the forward calls and "ids" [2] the sum of the sample ids seen and the last step; it also
// keeps the last forward context it was given. Shared by tests/nn and tests/trainer.
#pragma once

#include <numeric>

#include "mirror/error.h"
#include "mirror/nn/layer.h"

namespace mirror::nn::testing {

class CountingLayer final : public Layer {
 public:
  std::string kind() const override { return "counting"; }
  Shape output_sample_shape(const Shape& input) const override { return input; }
  std::vector<BufferSpec> buffer_specs() const override { return {{"forwards", {1}, 0.0f}, {"ids", {2}, -1.0f}}; }
  void bind_buffers(std::span<float* const> buffers) override {
    MIRROR_CHECK(buffers.size() == 2, kInternal, "counting layer expects 2 buffers, got " << buffers.size());
    forwards_ = buffers[0];
    ids_ = buffers[1];
  }
  const Tensor& forward(const Tensor& x) override {
    forwards_[0] += 1.0f;
    if (context_) {
      ids_[0] += static_cast<float>(std::accumulate(context_->sample_ids.begin(), context_->sample_ids.end(),
                                                    std::int64_t{0}));
      ids_[1] = static_cast<float>(context_->step);
      last_seed = context_->seed;
      last_reducer = context_->reducer;
    }
    return x;
  }
  const Tensor* backward(const Tensor& dy, GradMode, bool, const LayerGradReady&) override { return &dy; }

  std::uint64_t last_seed = 0;
  ReplicaReducer* last_reducer = nullptr;

 private:
  float* forwards_ = nullptr;
  float* ids_ = nullptr;
};

}  // namespace mirror::nn::testing
