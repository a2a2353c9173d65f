// mirror/train/generate.h — text generation with a language model: the prompt's tokens go once through the
// model with a decode cache (mirror/nn/decode_cache.h), then every new token costs one position's forward.
// The window is the context the model was built for (its input sample [context], from the checkpoint): once the
// sequence is longer, each step feeds its last `context` tokens again from position 0 (a fresh cache), so every
// token is drawn from exactly the last `context` tokens, as nanoGPT crops its input.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "mirror/nn/decode_cache.h"
#include "mirror/nn/model.h"
#include "mirror/nn/tensor.h"
#include "mirror/train/sampling.h"

namespace mirror::train {

struct GenerateOptions {
  std::int64_t max_new_tokens = 200;  // >= 0
  SamplingOptions sampling;
  std::uint64_t seed = 0;             // of the draws (TokenSampler); the same seed gives the same tokens
  // Only tokens below this are drawn (the tokenizer's vocabulary, when the model's is larger); 0: the model's.
  std::int64_t token_limit = 0;
};

// kInvalidArgument naming the position and the vocabulary when a token is outside [0, vocab); for an empty prompt.
void check_prompt(std::span<const std::int32_t> prompt, std::int64_t vocab);

// Draws a sequence's next tokens one at a time (see above). The model must take token windows (its input
// sample is [context]); it is put in evaluation mode.
class Generator {
 public:
  // kInvalidArgument when the model does not take [context] token windows or the prompt fails check_prompt.
  Generator(nn::Model& model, std::span<const std::int32_t> prompt, const GenerateOptions& options);

  // The next token, appended to the sequence.
  std::int32_t next();

  const std::vector<std::int32_t>& tokens() const { return tokens_; }  // the prompt and every token drawn so far

 private:
  // The logits of the last position after feeding tokens_[begin, end) at positions [offset, offset + end - begin).
  std::span<const float> feed(std::size_t begin, std::size_t end, std::int64_t offset);

  nn::Model& model_;
  std::int64_t window_, vocab_, drawn_vocab_;  // drawn_vocab_: the tokens drawn from, a prefix of the vocabulary
  nn::DecodeCache cache_;
  std::int64_t cached_ = 0;  // positions in the cache (of the current window)
  TokenSampler sampler_;
  std::vector<std::int32_t> tokens_;
  nn::Tensor ids_;
  std::vector<float> last_logits_;
};

// The max_new_tokens tokens that follow `prompt`, each passed to on_token as soon as it is drawn.
std::vector<std::int32_t> generate(nn::Model& model, std::span<const std::int32_t> prompt,
                                   const GenerateOptions& options,
                                   const std::function<void(std::int32_t)>& on_token = {});

}  // namespace mirror::train
