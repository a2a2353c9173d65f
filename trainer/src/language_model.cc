// language_model.cc — mirror/train/language_model.h: a token dataset's window length and vocabulary checked
// against the model, and perplexity and bits per byte.
#include "mirror/train/language_model.h"

#include <cmath>

#include "mirror/error.h"

namespace mirror::train {

LanguageModelInput language_model_input(std::int64_t requested, const nn::ModelDescription& model,
                                        std::string_view model_name, const data::Dataset& dataset) {
  const data::DatasetInfo& info = dataset.info();
  const nn::SequenceShape shape = nn::sequence_shape(model);
  MIRROR_CHECK(shape.takes_tokens, kInvalidArgument,
               "dataset " << dataset.describe() << " holds tokens, but model '" << model_name
                          << "' does not start with an embedding layer; train a language model (gpt-nano, gpt-mini, "
                             "gpt2-small, or a model file whose first layer is an embedding)");
  MIRROR_CHECK(shape.context > 0 || requested > 0, kInvalidArgument,
               "model '" << model_name << "' has no position_embedding to take its context from; give --context T");
  MIRROR_CHECK(shape.context == 0 || requested <= shape.context, kInvalidArgument,
               "--context " << requested << " is longer than the context of model '" << model_name << "' ("
                            << shape.context << " positions in its position embedding)");
  LanguageModelInput input;
  input.context = requested > 0 ? requested : shape.context;
  input.vocab = shape.vocab > 0 ? shape.vocab : info.vocab_size;
  MIRROR_CHECK(info.vocab_size <= input.vocab, kInvalidArgument,
               "dataset " << dataset.describe() << " has a vocabulary of " << info.vocab_size << " tokens ("
                          << info.tokenizer << "), more than the " << input.vocab << " of model '" << model_name
                          << "': token ids up to " << info.vocab_size - 1 << " would fall outside its embedding");
  return input;
}

double perplexity(double mean_loss) { return mean_loss < 700.0 ? std::exp(mean_loss) : HUGE_VAL; }

std::optional<double> bits_per_byte(double mean_loss, std::int64_t tokens, std::int64_t bytes) {
  if (bytes <= 0 || tokens <= 0) return std::nullopt;
  return mean_loss * static_cast<double>(tokens) / static_cast<double>(bytes) / std::log(2.0);
}

}  // namespace mirror::train
