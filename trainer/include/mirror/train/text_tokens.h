// mirror/train/text_tokens.h — text to token ids and back under a checkpoint's tokenizer (CheckpointState::
// tokenizer), for the programs that take or give text (mirror-generate). "bytes" is the one tokenizer of this
// build: every byte one token (vocabulary 256), decoded back to the same raw bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mirror::train {

// kInvalidArgument naming the tokenizer and the known ones unless this build knows it.
void check_tokenizer(const std::string& tokenizer);

// The number of tokens the tokenizer has text for (bytes: 256).
std::int64_t tokenizer_vocabulary(const std::string& tokenizer);

std::vector<std::int32_t> encode_text(const std::string& tokenizer, std::string_view text);

// kInvalidArgument for a token the tokenizer has no text for (bytes: outside [0, 256)).
std::string decode_tokens(const std::string& tokenizer, std::span<const std::int32_t> tokens);

}  // namespace mirror::train
