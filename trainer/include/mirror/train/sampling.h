// mirror/train/sampling.h — how a language model's next token is drawn from its logits: temperature, top-k and
// top-p (nucleus) filtering, and a seeded draw, so that the same seed gives the same text on every machine.
//
// The distribution (sampling_distribution): p = softmax(logits / temperature), computed in double; top_k > 0
// keeps the k most likely tokens (ties: the lower id first) and renormalises; top_p < 1 then keeps the smallest
// set of most likely tokens whose probability sums to >= top_p and renormalises. Temperature 0 is greedy: all
// the probability on the arg-max (the lowest id among equal maxima), and no random number is used.
// The draw (TokenSampler): u in [0, 1) from the top 53 bits of one std::mt19937_64 output (the same on every
// standard library), then the first token whose cumulative probability passes u.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace mirror::train {

struct SamplingOptions {
  double temperature = 1.0;  // >= 0; 0: greedy
  std::int64_t top_k = 0;    // >= 0; 0: every token
  double top_p = 1.0;        // in (0, 1]; 1: every token
};

// kInvalidArgument naming the option, the value and the range allowed.
void check_sampling_options(const SamplingOptions& options);

// The probability of every token (see above); logits must not be empty.
std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingOptions& options);

// The index of the largest logit (the lowest one among equal maxima).
std::int32_t argmax_token(std::span<const float> logits);

class TokenSampler {
 public:
  // Checks the options (check_sampling_options).
  TokenSampler(const SamplingOptions& options, std::uint64_t seed);

  // The next token drawn from sampling_distribution(logits): one random number per call, none when greedy.
  std::int32_t next(std::span<const float> logits);

  // The token of cumulative probability u in [0, 1) under `probabilities` (the first whose running sum passes
  // u; the last with a non-zero probability when rounding leaves the sum at or below u).
  static std::int32_t pick(std::span<const double> probabilities, double u);

 private:
  SamplingOptions options_;
  std::mt19937_64 engine_;
};

}  // namespace mirror::train
