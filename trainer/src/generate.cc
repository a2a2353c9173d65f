// generate.cc — mirror/train/generate.h: which tokens each step feeds at which positions (the rest of the prompt
// and the last token while the sequence fits the window, the whole cropped window once it does not), and the
// last position's logits handed to the sampler.
#include "mirror/train/generate.h"

#include <algorithm>

#include "mirror/error.h"

namespace mirror::train {
namespace {

// The model's window: its input sample [context] of token ids.
std::int64_t token_window(const nn::Model& model) {
  const nn::Shape& shape = model.input_sample_shape();
  MIRROR_CHECK(shape.size() == 1, kInvalidArgument,
               "generation needs a language model (input samples [context] of token ids), got a model of input "
                   << nn::to_string(shape));
  return shape[0];
}

}  // namespace

void check_prompt(std::span<const std::int32_t> prompt, std::int64_t vocab) {
  MIRROR_CHECK(!prompt.empty(), kInvalidArgument, "the prompt is empty: generation needs at least one token");
  for (std::size_t i = 0; i < prompt.size(); ++i)
    MIRROR_CHECK(prompt[i] >= 0 && prompt[i] < vocab, kInvalidArgument,
                 "prompt token " << prompt[i] << " at position " << i << " is outside the model's vocabulary [0, "
                                 << vocab << ")");
}

Generator::Generator(nn::Model& model, std::span<const std::int32_t> prompt, const GenerateOptions& options)
    : model_(model), window_(token_window(model)), vocab_(model.num_classes()),
      drawn_vocab_(options.token_limit > 0 ? std::min(options.token_limit, vocab_) : vocab_), cache_(window_, model.device()),
      sampler_(options.sampling, options.seed), tokens_(prompt.begin(), prompt.end()),
      ids_({1, 1}, model.device(), nn::DType::kInt32), last_logits_(static_cast<std::size_t>(vocab_)) {
  check_prompt(prompt, vocab_);
  MIRROR_CHECK(options.token_limit >= 0, kInvalidArgument,
               "generation: token_limit must be >= 0 (0: the model's vocabulary), got " << options.token_limit);
  model_.set_training(false);
}

std::span<const float> Generator::feed(std::size_t begin, std::size_t end, std::int64_t offset) {
  const auto count = static_cast<std::int64_t>(end - begin);
  ids_.resize({1, count});
  ids_.copy_from_host(std::span<const std::int32_t>(tokens_.data() + begin, end - begin));
  nn::ForwardContext context;
  context.cache = &cache_;
  context.position_offset = offset;
  const nn::Tensor& logits = model_.forward(ids_, context);
  MIRROR_CHECK(logits.numel() == count * vocab_, kInternal,
               "generation: logits of shape " << nn::to_string(logits.shape()) << " for " << count << " positions of "
                                              << vocab_ << " tokens");
  nn::copy_device_to_host(model_.device(), last_logits_.data(), logits.data() + (count - 1) * vocab_,
                          last_logits_.size() * sizeof(float));
  return last_logits_;
}

std::int32_t Generator::next() {
  const std::size_t length = tokens_.size();
  const auto window = static_cast<std::size_t>(window_);
  std::span<const float> logits;
  if (length <= window) {  // the tokens not cached yet, after those that are
    logits = feed(static_cast<std::size_t>(cached_), length, cached_);
    cached_ = static_cast<std::int64_t>(length);
  } else {  // cropped: the last `window` tokens afresh from position 0
    logits = feed(length - window, length, 0);
    cached_ = window_;
  }
  const std::int32_t token = sampler_.next(logits.first(static_cast<std::size_t>(drawn_vocab_)));
  tokens_.push_back(token);
  return token;
}

std::vector<std::int32_t> generate(nn::Model& model, std::span<const std::int32_t> prompt,
                                   const GenerateOptions& options, const std::function<void(std::int32_t)>& on_token) {
  MIRROR_CHECK(options.max_new_tokens >= 0, kInvalidArgument,
               "max-new-tokens must be an integer >= 0, got " << options.max_new_tokens);
  Generator generator(model, prompt, options);
  std::vector<std::int32_t> drawn;
  for (std::int64_t i = 0; i < options.max_new_tokens; ++i) {
    drawn.push_back(generator.next());
    if (on_token) on_token(drawn.back());
  }
  return drawn;
}

}  // namespace mirror::train
