// mirror/data/text.h — `mirror-data text`: text files into a token dataset (docs/dataset-format.md, "Token
// datasets"). The files' contents are concatenated in the order given; the split point is decided on the bytes:
// of n bytes the first floor(n * (1 - test_fraction)) are the train split's text and the rest the test split's
// (nanoGPT's rule, on bytes; for "bytes" tokens and bytes are the same), except that for the tokenizers of text
// (sentencepiece, gpt2) a split point inside a UTF-8 character moves back to that character's first byte. The tokenizer is made from the train
// split alone (sentencepiece trains on it), then each split is encoded on its own, checked to decode back to its
// text, and written with its byte count and the tokenizer's files. The output is written under a temporary name
// next to it and renamed into place only when complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mirror/data/tokenizer.h"

namespace mirror::data {

struct TextOptions {
  std::string tokenizer = "bytes";  // one of known_tokenizers()
  double test_fraction = 0.1;       // 0 < f < 1
  int64_t chunk_tokens = 0;         // tokens per HDF5 chunk; 0: kDefaultTokenChunk (65536)
  int64_t vocab_size = 0;           // sentencepiece: the vocabulary to train
  std::string vocab_file = {};      // gpt2: Hugging Face's vocab.json
  std::string merges_file = {};     // gpt2: Hugging Face's merges.txt
};

struct TextSummary {
  std::string file;               // written
  std::string tokenizer;
  int64_t vocab_size = 0;
  int64_t train_tokens = 0, test_tokens = 0;
  int64_t train_bytes = 0, test_bytes = 0;  // bytes of text in each split
  int64_t token_bytes = 0;        // 2 (uint16) or 4 (uint32)
};

// floor(bytes * (1 - test_fraction)): the train split's byte count (computed in double, as Python's
// int(n * (1 - f)) does).
int64_t text_train_bytes(int64_t bytes, double test_fraction);

// Writes `out` from `inputs`. Throws kInvalidArgument for an unknown tokenizer (naming the known ones) or settings
// that do not fit it, a fraction outside (0, 1), no inputs, an empty text, a split that would be empty or a text
// the tokenizer cannot round-trip; kIo for an input that is missing, unreadable or not a regular file, kFormat for
// a malformed tokenizer file. Nothing is left under `out` (or a temporary name) then.
TextSummary write_text_dataset(const std::string& out, const std::vector<std::string>& inputs,
                               const TextOptions& options = {});

}  // namespace mirror::data
