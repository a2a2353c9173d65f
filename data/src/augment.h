// augment.h — Augmenter (private): the random crop with padding and horizontal flip of AugmentOptions
// (train_loader.h), applied to a scaled batch in place. Each sample's draw (crop offset dy, dx in
// [0, 2P], flip) comes from Rng(mix_key(seed, epoch, global index)) alone, so it depends on nothing but
// those three numbers.
#pragma once

#include <cstdint>
#include <vector>

#include "mirror/data/batch.h"
#include "mirror/data/dataset.h"
#include "mirror/data/train_loader.h"

namespace mirror::data {

class Augmenter {
 public:
  // Throws kInvalidArgument for a negative padding, or for samples that are not [H, W] or [C, H, W].
  Augmenter(const AugmentOptions& options, const DatasetInfo& info, uint64_t seed);

  // Augments every sample of `batch` (batch.indices give the global indices) for epoch `epoch`.
  void apply(Batch& batch, int64_t epoch);

  struct Draw {
    int64_t dy = 0, dx = 0;  // top-left corner of the crop in the padded image, 0 .. 2P
    bool flip = false;
  };
  Draw draw(int64_t epoch, int64_t index) const;

 private:
  void apply_one(float* sample, const Draw& d);

  AugmentOptions options_;
  int64_t channels_ = 1, height_ = 0, width_ = 0;
  float pad_value_ = 0;  // stored value 0 after scaling
  uint64_t seed_;
  std::vector<float> scratch_;
};

}  // namespace mirror::data
