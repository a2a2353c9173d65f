// mirror/data/text.h — `mirror-data text`: text files into a token dataset (docs/dataset-format.md, "Token
// datasets"). The files' contents are concatenated in the order given and tokenized; of n tokens the first
// floor(n * (1 - test_fraction)) are the train split and the rest the test split (nanoGPT's rule). The
// output is written under a temporary name next to it and renamed into place only when complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mirror::data {

// The tokenizers `mirror-data text` knows, by name: "bytes" (every byte is a token; vocabulary 256).
std::vector<std::string> known_tokenizers();

struct TextOptions {
  std::string tokenizer = "bytes";
  double test_fraction = 0.1;  // 0 < f < 1
  int64_t chunk_tokens = 0;    // tokens per HDF5 chunk; 0: kDefaultTokenChunk (65536)
};

struct TextSummary {
  std::string file;               // written
  std::string tokenizer;
  int64_t vocab_size = 0;
  int64_t train_tokens = 0, test_tokens = 0;
  int64_t token_bytes = 0;        // 2 (uint16) or 4 (uint32)
};

// floor(tokens * (1 - test_fraction)): the train split's token count (computed in double, as Python's
// int(n * (1 - f)) does).
int64_t text_train_tokens(int64_t tokens, double test_fraction);

// Writes `out` from `inputs`. Throws kInvalidArgument for an unknown tokenizer (naming the known ones), a
// fraction outside (0, 1), no inputs, an empty text or a split that would be empty; kIo for an input that
// is missing, unreadable or not a regular file. Nothing is left under `out` (or a temporary name) then.
TextSummary write_text_dataset(const std::string& out, const std::vector<std::string>& inputs,
                               const TextOptions& options = {});

}  // namespace mirror::data
