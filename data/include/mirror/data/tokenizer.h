// mirror/data/tokenizer.h — the tokenizers of token datasets: text to token ids and back.
//
// One table row per tokenizer (tokenizer_table.cc), each implemented in one file:
//   "bytes"         every byte a token (vocabulary 256); no files.
//   "sentencepiece" a SentencePiece BPE model trained on the train split (byte fallback, identity normalization,
//                   no dummy prefix, so any UTF-8 text round-trips); its file: "model" (the serialized ModelProto).
//   "gpt2"          GPT-2's byte-level BPE from Hugging Face's files "vocab.json" and "merges.txt" (the user's);
//                   GPT-2's pre-tokenizing pattern (PCRE2, UTF + UCP), merges by rank.
// A tokenizer is made of named files ("blobs") that datasets (/tokenizer/<name>, uint8) and checkpoints carry,
// so a tokenizer is rebuilt anywhere from its name and its blobs alone (load_tokenizer).
//
// Contract of every tokenizer: decode is compositional, decode(a ++ b) == decode(a) + decode(b), so tokens can be
// decoded one at a time as they are generated; and decode(encode(t)) == t for the texts it accepts (bytes: any;
// sentencepiece, gpt2: valid UTF-8 — gpt2 also any bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mirror::data {

class Dataset;

// One file a tokenizer is made of: its name ("model", "vocab.json", "merges.txt") and its bytes.
struct TokenizerBlob {
  std::string name;
  std::string bytes;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;
  // Token ids are in [0, vocab_size()).
  virtual std::int64_t vocab_size() const = 0;
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  // kInvalidArgument for a token outside [0, vocab_size()).
  virtual std::string decode(std::span<const std::int32_t> tokens) const = 0;
  // The files that load_tokenizer(name(), blobs()) rebuilds this tokenizer from (bytes: none).
  virtual std::vector<TokenizerBlob> blobs() const = 0;
};

// What `mirror-data text` asks for: the tokenizer's name and what making it needs.
struct TokenizerSpec {
  std::string name = "bytes";
  std::int64_t vocab_size = 0;  // sentencepiece: the vocabulary to train (required)
  std::string vocab_file = {};   // gpt2: Hugging Face's vocab.json (required)
  std::string merges_file = {};  // gpt2: Hugging Face's merges.txt (required)
};

// The tokenizers of this build, in table order ("bytes", "sentencepiece", "gpt2").
std::vector<std::string> known_tokenizers();

// Makes the tokenizer `spec` names: sentencepiece trains on `train_text`; gpt2 reads its two files. Throws
// kInvalidArgument for an unknown name (naming the known ones) or settings that do not fit it (a missing or too
// small --vocab-size, missing --vocab/--merges), kIo for a file that cannot be read, kFormat for a malformed one.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& spec, std::string_view train_text);

// Rebuilds a tokenizer from its name and files, as a dataset or a checkpoint stores them. Throws kInvalidArgument
// for an unknown name, kFormat for missing or malformed files.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& name, const std::vector<TokenizerBlob>& blobs);

// The blobs stored under /tokenizer in a token dataset's file (none when it has no such group).
std::vector<TokenizerBlob> read_tokenizer_blobs(const Dataset& dataset);

}  // namespace mirror::data
