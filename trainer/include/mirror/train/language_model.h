// mirror/train/language_model.h — what ties a token dataset to a language model: the window length and the
// vocabulary the model is built for (checked against the model's description and the dataset, with errors
// that name both), and the figures reported beside the loss (perplexity, bits per byte).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mirror/data/dataset.h"
#include "mirror/nn/model_description.h"

namespace mirror::train {

struct LanguageModelInput {
  std::int64_t context = 0;  // tokens per window input (the model's input sample is [context])
  std::int64_t vocab = 0;    // the model's vocabulary: its embedding's, or the dataset's for "classes"
};

// For a token dataset: the context is `requested` (--context; 0: the model's, its position embedding's rows)
// and the vocabulary the model's (a fixed "vocab") or the dataset's. kInvalidArgument, naming the model and the
// dataset, when the model does not take token ids, has no context and none is requested, is asked for a longer
// context than its position embedding holds, or has a smaller vocabulary than the dataset's.
LanguageModelInput language_model_input(std::int64_t requested, const nn::ModelDescription& model,
                                        std::string_view model_name, const data::Dataset& dataset);

// exp(loss), capped where it would overflow a double.
double perplexity(double mean_loss);
// Bits per byte of text for a mean loss in nats per token over a split of `tokens` tokens that stand for `bytes`
// bytes of text (SplitInfo::size, SplitInfo::text_bytes): mean_loss * tokens / bytes / ln 2. nullopt where the
// dataset does not know its bytes (bytes <= 0) or has no tokens.
std::optional<double> bits_per_byte(double mean_loss, std::int64_t tokens, std::int64_t bytes);

}  // namespace mirror::train
