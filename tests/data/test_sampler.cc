// test_sampler.cc — Sampler in one process: the ranks of a job built side by side must cover each epoch
// exactly once minus the dropped tail, be disjoint, be deterministic, change order between epochs, and
// together see at every step exactly what one rank with the whole global batch sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "mirror/data/sampler.h"
#include "mirror/error.h"

namespace mirror::data {
namespace {

struct Case {
  int world;
  int64_t batch, size;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int w : {1, 2, 3, 4}) {
    for (int64_t b : {1, 3, 8}) {
      for (int64_t n : {int64_t{w} * b, int64_t{100}, int64_t{101}, int64_t{257}}) {
        if (n >= w * b) out.push_back({w, b, n});
      }
    }
  }
  return out;
}

TEST(Sampler, RanksSideBySideCoverEpochOnceAndAreDisjoint) {
  for (const Case& c : cases()) {
    SCOPED_TRACE("world " + std::to_string(c.world) + " batch " + std::to_string(c.batch) + " size " +
                 std::to_string(c.size));
    std::vector<Sampler> ranks;
    for (int r = 0; r < c.world; ++r) ranks.emplace_back(SamplerOptions{42, c.world, r, c.batch, c.size});
    const int64_t steps = c.size / (c.world * c.batch);  // floor: the tail is dropped
    for (int64_t epoch : {0, 1, 5}) {
      std::vector<int> seen(static_cast<std::size_t>(c.size), 0);
      for (const Sampler& s : ranks) {
        ASSERT_EQ(s.steps_per_epoch(), steps);
        for (int64_t t = 0; t < steps; ++t) {
          const auto idx = s.indices(epoch, t);
          ASSERT_EQ(static_cast<int64_t>(idx.size()), c.batch);
          for (int64_t i : idx) {
            ASSERT_GE(i, 0);
            ASSERT_LT(i, c.size);
            ++seen[static_cast<std::size_t>(i)];
          }
        }
      }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k <= 1; })) << "a sample seen twice";
      EXPECT_EQ(std::accumulate(seen.begin(), seen.end(), int64_t{0}), steps * c.world * c.batch);
    }
  }
}

TEST(Sampler, NRanksStepSlicesEqualOneRankWithNTimesTheBatch) {
  for (const Case& c : cases()) {
    SCOPED_TRACE("world " + std::to_string(c.world) + " batch " + std::to_string(c.batch) + " size " +
                 std::to_string(c.size));
    const Sampler one(SamplerOptions{7, 1, 0, c.world * c.batch, c.size});
    std::vector<Sampler> ranks;
    for (int r = 0; r < c.world; ++r) ranks.emplace_back(SamplerOptions{7, c.world, r, c.batch, c.size});
    ASSERT_EQ(one.steps_per_epoch(), ranks[0].steps_per_epoch());
    for (int64_t epoch : {0, 3}) {
      for (int64_t t = 0; t < one.steps_per_epoch(); ++t) {
        std::vector<int64_t> concat;
        for (const Sampler& s : ranks) {
          const auto idx = s.indices(epoch, t);
          concat.insert(concat.end(), idx.begin(), idx.end());
        }
        ASSERT_EQ(concat, one.indices(epoch, t)) << "epoch " << epoch << " step " << t;
        ASSERT_EQ(concat, ranks[0].global_batch(epoch, t));
      }
    }
  }
}

TEST(Sampler, EpochOrderIsAPermutation) {
  const Sampler s(SamplerOptions{1, 2, 0, 5, 1000});
  auto order = *s.epoch_order(4);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(order, iota);
}

TEST(Sampler, DeterministicForEqualSeedsDifferentAcrossSeedsAndEpochs) {
  const Sampler a(SamplerOptions{99, 2, 1, 4, 500});
  const Sampler b(SamplerOptions{99, 2, 1, 4, 500});
  const Sampler c(SamplerOptions{100, 2, 1, 4, 500});
  for (int64_t epoch : {0, 1, 2}) {
    EXPECT_EQ(*a.epoch_order(epoch), *b.epoch_order(epoch));
    EXPECT_NE(*a.epoch_order(epoch), *c.epoch_order(epoch));
    for (int64_t t = 0; t < a.steps_per_epoch(); t += 17) EXPECT_EQ(a.indices(epoch, t), b.indices(epoch, t));
  }
  EXPECT_NE(*a.epoch_order(0), *a.epoch_order(1));
  EXPECT_NE(*a.epoch_order(1), *a.epoch_order(2));
  // Not the identity either: a shuffle that did nothing would pass the checks above only by accident.
  std::vector<int64_t> iota(500);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_NE(*a.epoch_order(0), iota);
}

TEST(Sampler, ShuffleIsRoughlyUniform) {
  // Position of sample 0 over many epochs: each of 10 buckets of positions should get ~ 1/10.
  const Sampler s(SamplerOptions{3, 1, 0, 1, 100});
  std::vector<int> bucket(10, 0);
  for (int64_t e = 0; e < 2000; ++e) {
    const auto& order = *s.epoch_order(e);
    const auto pos = std::find(order.begin(), order.end(), 0) - order.begin();
    ++bucket[static_cast<std::size_t>(pos / 10)];
  }
  for (int k : bucket) {
    EXPECT_GT(k, 120);  // expected 200 each; a 5-sigma band is about 200 +- 67
    EXPECT_LT(k, 280);
  }
}

TEST(Sampler, RejectsBadOptionsWithClearMessages) {
  auto message = [](SamplerOptions o) -> std::string {
    try {
      Sampler s(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      return e.message();
    }
    return "";
  };
  EXPECT_NE(message({0, 0, 0, 1, 10}).find("world size"), std::string::npos);
  EXPECT_NE(message({0, 2, 2, 1, 10}).find("rank 2"), std::string::npos);
  EXPECT_NE(message({0, 2, 0, 0, 10}).find("batch"), std::string::npos);
  const std::string small = message({0, 4, 0, 10, 30});
  EXPECT_NE(small.find("30 samples"), std::string::npos) << small;
  EXPECT_NE(small.find("4 ranks x 10 = 40"), std::string::npos) << small;
  EXPECT_NE(small.find("3 ranks x 10 would fit"), std::string::npos) << small;
  EXPECT_NE(small.find("4 ranks x batch 7"), std::string::npos) << small;
  const Sampler ok(SamplerOptions{0, 1, 0, 10, 30});
  EXPECT_THROW(ok.indices(0, 3), Error);
  EXPECT_THROW(ok.indices(-1, 0), Error);
}

}  // namespace
}  // namespace mirror::data
