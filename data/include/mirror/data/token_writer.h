// mirror/data/token_writer.h — TokenWriter: writes a token dataset (docs/dataset-format.md, "Token datasets"):
// one file with the root attributes format_version, kind = "tokens", vocab_size and tokenizer (and train_bytes,
// test_bytes where the text's size is known), the chunked 1-D datasets /train/tokens and /test/tokens (uint16 when
// vocab_size <= 65536, else uint32), from tokens appended in order, and the tokenizer's files under /tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mirror/data/tokenizer.h"

namespace mirror::data {

inline constexpr int64_t kDefaultTokenChunk = 65536;  // tokens per HDF5 chunk: 128 KiB of uint16

struct TokenHeader {
  int64_t vocab_size = 0;  // 1 .. 2^31 - 1
  std::string tokenizer;   // e.g. "bytes"; not empty
  // Bytes of text each split's tokens stand for (attributes train_bytes, test_bytes): < 0 when unknown (not written).
  int64_t train_bytes = -1, test_bytes = -1;
  std::vector<TokenizerBlob> tokenizer_blobs = {};  // the tokenizer's files, written under /tokenizer
};

class TokenWriter {
 public:
  // Creates `path` (truncating it) for splits of `train_tokens` and `test_tokens` tokens, chunk_tokens
  // tokens per chunk (0: kDefaultTokenChunk). Throws kInvalidArgument for a bad header or sizes, kIo when
  // the file cannot be created.
  TokenWriter(const std::string& path, const TokenHeader& header, int64_t train_tokens, int64_t test_tokens,
              int64_t chunk_tokens = 0);
  ~TokenWriter();  // closes the file; never throws (call close() to learn about errors)
  TokenWriter(const TokenWriter&) = delete;
  TokenWriter& operator=(const TokenWriter&) = delete;

  // Appends `count` tokens, each < vocab_size, to `split` ("train" | "test").
  void append(const std::string& split, const uint32_t* tokens, int64_t count);
  // Checks that every split received exactly its size, flushes and closes.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mirror::data
