// augment.cc — Augmenter: per-sample draws from a counter-based hash, and the crop/flip itself.
#include "augment.h"

#include <algorithm>
#include <cstring>

#include "mirror/error.h"
#include "rng.h"

namespace mirror::data {

namespace {
constexpr uint64_t kAugmentSalt = 0x61756780ULL;  // keeps augmentation draws apart from the Sampler's
}

Augmenter::Augmenter(const AugmentOptions& options, const DatasetInfo& info, uint64_t seed)
    : options_(options), seed_(seed) {
  MIRROR_CHECK(options.crop_padding >= 0, kInvalidArgument, "crop padding must be >= 0, got " << options.crop_padding);
  const auto& s = info.sample_shape;
  MIRROR_CHECK(s.size() == 2 || s.size() == 3, kInvalidArgument,
               "augmentation (random crop, flip) needs image samples of shape [H, W] or [C, H, W]; the dataset's "
               "samples have " << s.size() << " dimension(s) (flat features cannot be cropped or flipped)");
  channels_ = s.size() == 3 ? s[0] : 1;
  height_ = s[s.size() - 2];
  width_ = s[s.size() - 1];
  pad_value_ = static_cast<float>(-info.scaling.mean / info.scaling.std);
  scratch_.resize(static_cast<std::size_t>(channels_ * height_ * width_));
}

Augmenter::Draw Augmenter::draw(int64_t epoch, int64_t index) const {
  Rng rng(mix_key(seed_ ^ kAugmentSalt, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index)));
  Draw d;
  const auto span = static_cast<uint64_t>(2 * options_.crop_padding + 1);
  d.dy = static_cast<int64_t>(rng.below(span));
  d.dx = static_cast<int64_t>(rng.below(span));
  d.flip = options_.hflip && rng.below(2) == 1;
  return d;
}

void Augmenter::apply_one(float* sample, const Draw& d) {
  const int64_t p = options_.crop_padding;
  std::memcpy(scratch_.data(), sample, scratch_.size() * sizeof(float));
  for (int64_t c = 0; c < channels_; ++c) {
    const float* in = scratch_.data() + c * height_ * width_;
    float* out = sample + c * height_ * width_;
    for (int64_t y = 0; y < height_; ++y) {
      const int64_t sy = y + d.dy - p;  // row of the unpadded image
      for (int64_t x = 0; x < width_; ++x) {
        const int64_t cx = d.flip ? width_ - 1 - x : x;  // flip after the crop: column of the crop
        const int64_t sx = cx + d.dx - p;
        const bool inside = sy >= 0 && sy < height_ && sx >= 0 && sx < width_;
        out[y * width_ + x] = inside ? in[sy * width_ + sx] : pad_value_;
      }
    }
  }
}

void Augmenter::apply(Batch& batch, int64_t epoch) {
  if (!options_.enabled()) return;
  const std::size_t features = scratch_.size();
  for (std::size_t k = 0; k < static_cast<std::size_t>(batch.size); ++k) {
    apply_one(batch.x.data() + k * features, draw(epoch, batch.indices[k]));
  }
}

}  // namespace mirror::data
