// tokenizer_bytes.cc — the "bytes" tokenizer: every byte of the text one token (vocabulary 256); no files.
#include "mirror/error.h"
#include "tokenizer_rows.h"

namespace mirror::data {

namespace {

class BytesTokenizer final : public Tokenizer {
 public:
  std::string name() const override { return "bytes"; }
  std::int64_t vocab_size() const override { return 256; }
  std::vector<std::int32_t> encode(std::string_view text) const override {
    std::vector<std::int32_t> tokens;
    tokens.reserve(text.size());
    for (char c : text) tokens.push_back(static_cast<std::int32_t>(static_cast<unsigned char>(c)));
    return tokens;
  }
  std::string decode(std::span<const std::int32_t> tokens) const override {
    std::string text;
    text.reserve(tokens.size());
    for (std::int32_t t : tokens) {
      MIRROR_CHECK(t >= 0 && t < 256, kInvalidArgument, "token " << t << " is not a byte (tokenizer bytes)");
      text.push_back(static_cast<char>(static_cast<unsigned char>(t)));
    }
    return text;
  }
  std::vector<TokenizerBlob> blobs() const override { return {}; }
};

}  // namespace

std::unique_ptr<Tokenizer> make_bytes_tokenizer(const TokenizerSpec&, std::string_view) {
  return std::make_unique<BytesTokenizer>();
}

std::unique_ptr<Tokenizer> load_bytes_tokenizer(const std::vector<TokenizerBlob>&) {
  return std::make_unique<BytesTokenizer>();
}

}  // namespace mirror::data
