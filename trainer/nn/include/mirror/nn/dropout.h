// mirror/nn/dropout.h — Dropout (inverted): in training each element is kept with probability 1 - p and
// scaled by 1 / (1 - p), else zeroed; in evaluation the identity. The mask is a pure function of (seed,
// optimizer step, the sample's dataset index, the element's index within the sample) through a counter-based
// hash (dropout_keep), so it does not depend on how the batch is split over ranks, and a resumed run draws
// the same masks. Without sample ids (a unit test) the row index stands in for the id.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;

// The counter-based draw: a uniform value in [0, 1) from (seed, step, sample, element) by splitmix64
// finalisers chained over the four keys (Steele, Lea, Flood 2014), 24 bits; kept when >= p. The masks of
// both backends are drawn from the same definition (src/dropout_hash.h).
float dropout_uniform(std::uint64_t seed, std::int64_t step, std::int64_t sample, std::int64_t element);

class Dropout final : public Layer {
 public:
  Dropout(float p, Device device);
  static std::unique_ptr<Layer> create(const LayerArgs& args);  // {"type": "dropout", "p": 0.25}

  std::string kind() const override { return "dropout"; }
  Shape output_sample_shape(const Shape& input_sample_shape) const override { return input_sample_shape; }
  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;
  float p() const { return p_; }

 private:
  float p_;
  Device device_;
  bool masked_ = false;       // the last forward applied a mask (training, p > 0)
  std::vector<std::uint64_t> row_keys_;  // the last forward's key per sample (dropout_hash.h)
  Shape shape_;               // of the last forward's batch
  Tensor mask_, y_, dx_;      // mask_: 0 or 1/(1-p) per element, on the device
  Tensor pass_;               // a view: the identity (evaluation, p = 0)
};

}  // namespace mirror::nn
