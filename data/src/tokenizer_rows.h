// tokenizer_rows.h — the makers of each tokenizer (private): one pair per file tokenizer_<name>.cc, listed once in
// tokenizer_table.cc's table. `make` builds from a TokenizerSpec (and the train split's text), `load` from blobs.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "mirror/data/tokenizer.h"

namespace mirror::data {

std::unique_ptr<Tokenizer> make_bytes_tokenizer(const TokenizerSpec& spec, std::string_view train_text);
std::unique_ptr<Tokenizer> load_bytes_tokenizer(const std::vector<TokenizerBlob>& blobs);

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const TokenizerSpec& spec, std::string_view train_text);
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::vector<TokenizerBlob>& blobs);

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(const TokenizerSpec& spec, std::string_view train_text);
std::unique_ptr<Tokenizer> load_gpt2_tokenizer(const std::vector<TokenizerBlob>& blobs);

// The blob called `name`; kFormat naming the tokenizer and the blobs there are when it is missing.
const TokenizerBlob& find_blob(const std::vector<TokenizerBlob>& blobs, std::string_view name,
                               std::string_view tokenizer);

// The byte offset of the first byte of `text` that is not part of valid UTF-8, or npos.
std::size_t invalid_utf8_offset(std::string_view text);

}  // namespace mirror::data
