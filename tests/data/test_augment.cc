// test_augment.cc — the loader's augmentation (random crop with padding, horizontal flip):
//   - every augmented sample equals a plain reference (pad the known image with zero pixels, cut the H x W
//     window at some offset, mirror it) for exactly one (offset, flip), and every offset and both flips occur;
//   - the padding is the stored value 0 after scaling (-x_mean/x_std);
//   - the same (seed, epoch, global index) gives the same sample with 1, 2 or 3 ranks, any prefetch depth,
//     and after a resume mid-epoch; another epoch gives other draws;
//   - flat samples and a negative padding are refused.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "mirror/data/loader.h"
#include "mirror/data/writer.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using test::TempDir;

constexpr int64_t kN = 96, kC = 2, kH = 5, kW = 6, kP = 2;
constexpr double kMean = 0.5;  // scaling (v - 0.5) / 1: the padding is -0.5 after scaling

// Stored value of pixel (c, y, x) of sample i: unique across the sample, never 0 (0 is the padding).
float pixel(int64_t i, int64_t c, int64_t y, int64_t x) { return static_cast<float>(1 + i * 1000 + c * 100 + y * 10 + x); }

std::string write_images(const TempDir& dir) {
  DatasetHeader h;
  h.num_classes = 3;
  h.sample_shape = {kC, kH, kW};
  h.x_dtype = DType::kFloat32;
  h.scaling.mean = kMean;
  const std::string path = dir.file("img.h5");
  DatasetWriter w(path, h, kN, 4);
  for (const auto& [split, n] : {std::pair<const char*, int64_t>{"train", kN}, {"test", 4}}) {
    std::vector<float> x;
    std::vector<int32_t> y;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < kC; ++c)
        for (int64_t r = 0; r < kH; ++r)
          for (int64_t q = 0; q < kW; ++q) x.push_back(pixel(i, c, r, q));
      y.push_back(static_cast<int32_t>(i % 3));
    }
    w.append(split, x.data(), y.data(), n);
  }
  w.close();
  return path;
}

// The plain reference: the scaled image padded with kP zero pixels, the window at (dy, dx), then mirrored.
std::vector<float> reference(int64_t i, int64_t dy, int64_t dx, bool flip) {
  const int64_t ph = kH + 2 * kP, pw = kW + 2 * kP;
  std::vector<float> padded(static_cast<std::size_t>(kC * ph * pw), static_cast<float>(0.0 - kMean));
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t y = 0; y < kH; ++y)
      for (int64_t x = 0; x < kW; ++x)
        padded[static_cast<std::size_t>((c * ph + y + kP) * pw + x + kP)] = static_cast<float>(pixel(i, c, y, x) - kMean);
  std::vector<float> window;
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t y = 0; y < kH; ++y)
      for (int64_t x = 0; x < kW; ++x) window.push_back(padded[static_cast<std::size_t>((c * ph + y + dy) * pw + x + dx)]);
  if (flip) {
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t y = 0; y < kH; ++y) {
        auto row = window.begin() + (c * kH + y) * kW;
        std::reverse(row, row + kW);
      }
  }
  return window;
}

// global index -> augmented sample, for one epoch of a loader (all its steps).
using Samples = std::map<int64_t, std::vector<float>>;

Samples run_epoch(const Dataset& ds, int world, int rank, int64_t batch, int prefetch, int64_t epoch, int64_t first_step = 0,
                  AugmentOptions aug = {kP, true}, Sharding sharding = Sharding::kIndex) {
  SamplerOptions s;
  s.seed = 11;
  s.world_size = world;
  s.rank = rank;
  s.batch_per_rank = batch;
  LoaderOptions o;
  o.prefetch_depth = prefetch;
  o.augment = aug;
  o.sharding = sharding;
  TrainLoader loader(ds, s, o);
  loader.start_epoch(epoch, first_step);
  Samples out;
  Batch b;
  const auto f = static_cast<std::size_t>(kC * kH * kW);
  while (loader.next(b)) {
    for (std::size_t k = 0; k < static_cast<std::size_t>(b.size); ++k)
      out[b.indices[k]] = std::vector<float>(b.x.begin() + k * f, b.x.begin() + (k + 1) * f);
  }
  return out;
}

class Augment : public testing::Test {
 protected:
  TempDir dir_;
  Dataset ds_ = Dataset::open(write_images(dir_));
};

TEST_F(Augment, EachSampleIsOneCropAndFlipOfItsImage) {
  std::set<std::tuple<int64_t, int64_t, bool>> seen;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    // Files sharding in the last epoch: its batches carry global indices too.
    const Sharding sharding = epoch == 2 ? Sharding::kFiles : Sharding::kIndex;
    const Samples got = run_epoch(ds_, 1, 0, 8, 2, epoch, 0, {kP, true}, sharding);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kN));
    for (const auto& [i, sample] : got) {
      int matches = 0;
      for (int64_t dy = 0; dy <= 2 * kP; ++dy)
        for (int64_t dx = 0; dx <= 2 * kP; ++dx)
          for (bool flip : {false, true}) {
            if (reference(i, dy, dx, flip) == sample) {
              ++matches;
              seen.insert({dy, dx, flip});
            }
          }
      EXPECT_EQ(matches, 1) << "sample " << i << " of epoch " << epoch << " is not exactly one crop/flip of its image";
    }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>((2 * kP + 1) * (2 * kP + 1) * 2))
      << "not every offset and flip occurred in 3 x " << kN << " draws";
}

TEST_F(Augment, FlipAloneMirrorsOrKeeps) {
  const Samples got = run_epoch(ds_, 1, 0, 8, 0, 0, 0, {0, true});
  int flipped = 0;
  for (const auto& [i, sample] : got) {
    const bool kept = sample == reference(i, kP, kP, false), mirrored = sample == reference(i, kP, kP, true);
    EXPECT_TRUE(kept != mirrored) << "sample " << i;
    flipped += mirrored;
  }
  EXPECT_GT(flipped, kN / 4);
  EXPECT_LT(flipped, 3 * kN / 4);
}

TEST_F(Augment, SameSamplesWhateverTheRanksPrefetchOrResume) {
  const Samples one = run_epoch(ds_, 1, 0, 12, 0, 1);
  for (int world : {2, 3}) {
    Samples all;
    for (int r = 0; r < world; ++r) {
      const Samples part = run_epoch(ds_, world, r, 12 / world, r % 2 ? 3 : 1, 1);
      for (const auto& [i, s] : part) EXPECT_TRUE(all.emplace(i, s).second) << "sample " << i << " on two ranks";
    }
    EXPECT_EQ(all, one) << world << " ranks augmented differently from 1 rank";
  }
  EXPECT_EQ(run_epoch(ds_, 1, 0, 12, 4, 1), one) << "prefetch depth 4 differs from synchronous loading";
  const Samples resumed = run_epoch(ds_, 1, 0, 12, 2, 1, 5);  // steps 5.. of epoch 1
  ASSERT_FALSE(resumed.empty());
  for (const auto& [i, s] : resumed) EXPECT_EQ(s, one.at(i)) << "sample " << i << " after resume";
  const Samples other = run_epoch(ds_, 1, 0, 12, 0, 2);
  int differ = 0;
  for (const auto& [i, s] : other) differ += s != one.at(i);
  EXPECT_GT(differ, kN / 2) << "epoch 2 reused epoch 1's draws";
}

TEST(AugmentRefused, FlatSamplesAndNegativePadding) {
  TempDir dir;
  test::IdSpec spec;  // samples of shape [4]
  test::write_id_dataset(dir.file("flat.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("flat.h5"));
  SamplerOptions s;
  s.batch_per_rank = 4;
  LoaderOptions o;
  o.augment.hflip = true;
  try {
    TrainLoader loader(ds, s, o);
    FAIL() << "flat samples were augmented";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("needs image samples"), std::string::npos) << e.message();
  }
  TempDir dir2;
  const Dataset img = Dataset::open(write_images(dir2));
  o.augment = {-1, false};
  EXPECT_THROW(TrainLoader(img, s, o), Error);
}

}  // namespace
}  // namespace mirror::data
