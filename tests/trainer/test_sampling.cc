// test_sampling.cc — mirror/train/sampling.h against references computed here: greedy picks the arg-max (the
// lowest id among ties) and top-k = 1 draws the same; top-k keeps the k largest; top-p keeps the smallest set of
// most likely tokens whose probability reaches p, found by a plain sort; the temperature's distribution equals a
// directly computed softmax and 20000 draws land within 0.02 of it; the same seed gives the same draws, another
// seed others; bad options are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "mirror/error.h"
#include "mirror/train/sampling.h"

namespace mirror::train {
namespace {

std::vector<float> random_logits(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

std::int32_t plain_argmax(const std::vector<float>& v) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<std::int32_t>(best);
}

// softmax(v / t) in double, written out.
std::vector<double> plain_softmax(const std::vector<float>& v, double t) {
  double max_v = v[0], sum = 0.0;
  for (float x : v) max_v = std::max<double>(max_v, x);
  std::vector<double> p;
  for (float x : v) p.push_back(std::exp((x - max_v) / t));
  for (double x : p) sum += x;
  for (double& x : p) x /= sum;
  return p;
}

TEST(Sampling, GreedyPicksTheArgMaxAndTopKOneEqualsIt) {
  for (std::uint32_t trial = 0; trial < 50; ++trial) {
    const std::vector<float> logits = random_logits(37, trial);
    const std::int32_t want = plain_argmax(logits);
    TokenSampler greedy({0.0, 0, 1.0}, trial);
    TokenSampler top1({1.3, 1, 1.0}, trial + 100);
    EXPECT_EQ(greedy.next(logits), want) << trial;
    EXPECT_EQ(top1.next(logits), want) << trial;
    const std::vector<double> p = sampling_distribution(logits, {0.0, 0, 1.0});
    EXPECT_EQ(p[static_cast<std::size_t>(want)], 1.0);
    EXPECT_EQ(std::accumulate(p.begin(), p.end(), 0.0), 1.0);
  }
  const std::vector<float> tied = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(TokenSampler({0.0, 0, 1.0}, 0).next(tied), 1);
  EXPECT_EQ(TokenSampler({1.0, 1, 1.0}, 0).next(tied), 1);
}

TEST(Sampling, TopKKeepsTheKLargest) {
  const std::vector<float> logits = random_logits(20, 3);
  const std::vector<double> p = sampling_distribution(logits, {0.8, 4, 1.0});
  const std::vector<double> full = plain_softmax(logits, 0.8);
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  double kept = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (logits[i] >= sorted[3]) kept += full[i];
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] >= sorted[3])
      EXPECT_NEAR(p[i], full[i] / kept, 1e-12) << i;
    else
      EXPECT_EQ(p[i], 0.0) << i;
  }
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingP) {
  for (double top_p : {0.05, 0.3, 0.5, 0.9, 0.999}) {
    const std::vector<float> logits = random_logits(16, 7);
    const std::vector<double> full = plain_softmax(logits, 1.0);
    std::vector<std::pair<double, std::size_t>> sorted;
    for (std::size_t i = 0; i < full.size(); ++i) sorted.push_back({full[i], i});
    std::sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return a.first > b.first; });
    std::vector<bool> in_set(full.size(), false);
    double mass = 0.0;
    for (const auto& [prob, id] : sorted) {
      in_set[id] = true;
      mass += prob;
      if (mass >= top_p) break;
    }
    const std::vector<double> p = sampling_distribution(logits, {1.0, 0, top_p});
    for (std::size_t i = 0; i < full.size(); ++i) {
      if (in_set[i])
        EXPECT_NEAR(p[i], full[i] / mass, 1e-12) << "p " << top_p << " token " << i;
      else
        EXPECT_EQ(p[i], 0.0) << "p " << top_p << " token " << i;
    }
  }
}

TEST(Sampling, TemperatureDrawsFollowTheComputedSoftmax) {
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.5f};
  for (double t : {0.5, 1.0, 2.5}) {
    const std::vector<double> want = plain_softmax(logits, t);
    const std::vector<double> p = sampling_distribution(logits, {t, 0, 1.0});
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(p[i], want[i], 1e-12) << i;
    TokenSampler sampler({t, 0, 1.0}, 42);
    std::vector<int> counts(logits.size(), 0);
    const int draws = 20000;
    for (int k = 0; k < draws; ++k) ++counts[static_cast<std::size_t>(sampler.next(logits))];
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(static_cast<double>(counts[i]) / draws, want[i], 0.02) << "temperature " << t << " token " << i;
  }
}

std::vector<std::int32_t> draws(std::uint64_t seed, int n) {
  const std::vector<float> logits = random_logits(50, 9);
  TokenSampler sampler({1.0, 0, 0.95}, seed);
  std::vector<std::int32_t> out;
  for (int k = 0; k < n; ++k) out.push_back(sampler.next(logits));
  return out;
}

TEST(Sampling, TheSameSeedGivesTheSameDrawsAnotherSeedOthers) {
  EXPECT_EQ(draws(5, 200), draws(5, 200));
  EXPECT_NE(draws(5, 200), draws(6, 200));
}

TEST(Sampling, PickSkipsZeroProbabilitiesAndRounding) {
  const std::vector<double> p = {0.0, 0.25, 0.0, 0.75, 0.0};
  EXPECT_EQ(TokenSampler::pick(p, 0.0), 1);
  EXPECT_EQ(TokenSampler::pick(p, 0.2499), 1);
  EXPECT_EQ(TokenSampler::pick(p, 0.25), 3);
  EXPECT_EQ(TokenSampler::pick(p, 0.9999999999999999), 3);
  EXPECT_THROW(TokenSampler::pick(std::vector<double>{0.0, 0.0}, 0.5), Error);
}

TEST(Sampling, BadOptionsAreRefused) {
  const std::vector<float> logits = {1.0f, 2.0f};
  try {
    TokenSampler({-0.1, 0, 1.0}, 0);
    FAIL() << "negative temperature accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("temperature must be a number >= 0"), std::string::npos) << e.message();
  }
  EXPECT_THROW(TokenSampler({1.0, -1, 1.0}, 0), Error);
  EXPECT_THROW(TokenSampler({1.0, 0, 0.0}, 0), Error);
  EXPECT_THROW(TokenSampler({1.0, 0, 1.5}, 0), Error);
  EXPECT_THROW(sampling_distribution(logits, {NAN, 0, 1.0}), Error);
  EXPECT_THROW(sampling_distribution({}, {1.0, 0, 1.0}), Error);
}

}  // namespace
}  // namespace mirror::train
