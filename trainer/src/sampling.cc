// sampling.cc — mirror/train/sampling.h: softmax with temperature, the top-k and top-p cuts over the tokens
// sorted by probability, and the seeded draw.
#include "mirror/train/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mirror/error.h"

namespace mirror::train {
namespace {

// Token ids by decreasing probability, ties by increasing id.
std::vector<std::size_t> by_probability(const std::vector<double>& p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&p](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  return order;
}

void normalise(std::vector<double>& p) {
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& v : p) v /= sum;
}

// Zeroes every token after the first `keep` of `order`, then renormalises.
void keep_first(std::vector<double>& p, const std::vector<std::size_t>& order, std::size_t keep) {
  for (std::size_t r = keep; r < order.size(); ++r) p[order[r]] = 0.0;
  normalise(p);
}

// softmax(logits / temperature) in double, temperature > 0.
std::vector<double> softmax(std::span<const float> logits, double temperature) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
  normalise(p);
  return p;
}

// How many of the most likely tokens (in `order`) it takes for their probability to reach top_p.
std::size_t nucleus_size(const std::vector<double>& p, const std::vector<std::size_t>& order, double top_p) {
  double sum = 0.0;
  for (std::size_t r = 0; r < order.size(); ++r) {
    sum += p[order[r]];
    if (sum >= top_p) return r + 1;
  }
  return order.size();
}

}  // namespace

void check_sampling_options(const SamplingOptions& o) {
  MIRROR_CHECK(std::isfinite(o.temperature) && o.temperature >= 0.0, kInvalidArgument,
               "temperature must be a number >= 0 (0: greedy), got " << o.temperature);
  MIRROR_CHECK(o.top_k >= 0, kInvalidArgument, "top-k must be an integer >= 0 (0: every token), got " << o.top_k);
  MIRROR_CHECK(o.top_p > 0.0 && o.top_p <= 1.0, kInvalidArgument,
               "top-p must be a number in (0, 1] (1: every token), got " << o.top_p);
}

std::int32_t argmax_token(std::span<const float> logits) {
  MIRROR_CHECK(!logits.empty(), kInvalidArgument, "argmax of no logits");
  return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingOptions& options) {
  check_sampling_options(options);
  MIRROR_CHECK(!logits.empty(), kInvalidArgument, "sampling from no logits");
  if (options.temperature == 0.0) {
    std::vector<double> p(logits.size(), 0.0);
    p[static_cast<std::size_t>(argmax_token(logits))] = 1.0;
    return p;
  }
  std::vector<double> p = softmax(logits, options.temperature);
  const std::vector<std::size_t> order = by_probability(p);
  if (options.top_k > 0 && static_cast<std::size_t>(options.top_k) < p.size())
    keep_first(p, order, static_cast<std::size_t>(options.top_k));
  if (options.top_p < 1.0) keep_first(p, order, nucleus_size(p, order, options.top_p));
  return p;
}

TokenSampler::TokenSampler(const SamplingOptions& options, std::uint64_t seed) : options_(options), engine_(seed) {
  check_sampling_options(options);
}

std::int32_t TokenSampler::pick(std::span<const double> probabilities, double u) {
  double sum = 0.0;
  std::int32_t last = -1;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] <= 0.0) continue;
    last = static_cast<std::int32_t>(i);
    sum += probabilities[i];
    if (u < sum) return last;
  }
  MIRROR_CHECK(last >= 0, kInvalidArgument, "sampling from a distribution without any probability");
  return last;
}

std::int32_t TokenSampler::next(std::span<const float> logits) {
  if (options_.temperature == 0.0) return argmax_token(logits);
  const std::vector<double> p = sampling_distribution(logits, options_);
  const double u = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  return pick(p, u);
}

}  // namespace mirror::train
