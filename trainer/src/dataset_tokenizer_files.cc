// dataset_tokenizer_files.cc — mirror/train/text_tokens.h's dataset_tokenizer_files: a token dataset's tokenizer
// files copied into the checkpoint's form. Its own object file so that the trainer, which calls it, does not link
// the tokenizer table (and SentencePiece with it: text_tokens.cc says why).
#include "mirror/train/text_tokens.h"

namespace mirror::train {

std::vector<NamedBlob> dataset_tokenizer_files(const data::Dataset& dataset) {
  std::vector<NamedBlob> files;
  if (!dataset.info().text) return files;
  for (data::TokenizerBlob& b : data::read_tokenizer_blobs(dataset)) files.push_back({b.name, std::move(b.bytes)});
  return files;
}

}  // namespace mirror::train
