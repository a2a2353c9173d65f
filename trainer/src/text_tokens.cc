// text_tokens.cc — mirror/train/text_tokens.h: the byte tokenizer.
#include "mirror/train/text_tokens.h"

#include "mirror/error.h"

namespace mirror::train {

void check_tokenizer(const std::string& tokenizer) {
  MIRROR_CHECK(tokenizer == "bytes", kInvalidArgument,
               "tokenizer '" << tokenizer << "' is not one this build knows (known: bytes)");
}

std::int64_t tokenizer_vocabulary(const std::string& tokenizer) {
  check_tokenizer(tokenizer);
  return 256;
}

std::vector<std::int32_t> encode_text(const std::string& tokenizer, std::string_view text) {
  check_tokenizer(tokenizer);
  std::vector<std::int32_t> tokens;
  tokens.reserve(text.size());
  for (char c : text) tokens.push_back(static_cast<std::int32_t>(static_cast<unsigned char>(c)));
  return tokens;
}

std::string decode_tokens(const std::string& tokenizer, std::span<const std::int32_t> tokens) {
  check_tokenizer(tokenizer);
  std::string text;
  text.reserve(tokens.size());
  for (std::int32_t t : tokens) {
    MIRROR_CHECK(t >= 0 && t < 256, kInvalidArgument, "token " << t << " is not a byte (tokenizer bytes)");
    text.push_back(static_cast<char>(static_cast<unsigned char>(t)));
  }
  return text;
}

}  // namespace mirror::train
