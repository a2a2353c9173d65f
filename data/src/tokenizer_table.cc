// tokenizer_table.cc — the table of tokenizers (one row each: name, maker, loader), lookup by name with an
// error naming the known ones, and the helpers every tokenizer shares (finding a blob, checking UTF-8).
#include <sstream>

#include "mirror/data/text.h"
#include "mirror/error.h"
#include "tokenizer_rows.h"

namespace mirror::data {

namespace {

struct TokenizerRow {
  const char* name;
  std::unique_ptr<Tokenizer> (*make)(const TokenizerSpec&, std::string_view);
  std::unique_ptr<Tokenizer> (*load)(const std::vector<TokenizerBlob>&);
};
constexpr TokenizerRow kTokenizers[] = {
    {"bytes", make_bytes_tokenizer, load_bytes_tokenizer},                          // tokenizer_bytes.cc
    {"sentencepiece", make_sentencepiece_tokenizer, load_sentencepiece_tokenizer},  // tokenizer_sentencepiece.cc
    {"gpt2", make_gpt2_tokenizer, load_gpt2_tokenizer},                             // tokenizer_gpt2.cc
};

const TokenizerRow& find_row(const std::string& name) {
  for (const TokenizerRow& row : kTokenizers) {
    if (name == row.name) return row;
  }
  std::ostringstream known;
  for (const TokenizerRow& row : kTokenizers) known << (known.tellp() > 0 ? ", " : "") << "'" << row.name << "'";
  MIRROR_THROW(kInvalidArgument, "unknown tokenizer '" << name << "'; known tokenizers: " << known.str());
}

}  // namespace

std::vector<std::string> known_tokenizers() {
  std::vector<std::string> names;
  for (const TokenizerRow& row : kTokenizers) names.emplace_back(row.name);
  return names;
}

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerSpec& spec, std::string_view train_text) {
  return find_row(spec.name).make(spec, train_text);
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& name, const std::vector<TokenizerBlob>& blobs) {
  return find_row(name).load(blobs);
}

const TokenizerBlob& find_blob(const std::vector<TokenizerBlob>& blobs, std::string_view name,
                               std::string_view tokenizer) {
  std::ostringstream have;
  for (const TokenizerBlob& b : blobs) {
    if (b.name == name) return b;
    have << (have.tellp() > 0 ? ", " : "") << "'" << b.name << "'";
  }
  MIRROR_THROW(kFormat, "tokenizer '" << tokenizer << "' needs its file '" << name << "', but "
                                      << (blobs.empty() ? std::string("no tokenizer files are stored")
                                                        : "only " + have.str() + " are stored")
                                      << " (see docs/dataset-format.md, \"Tokenizers\")");
}

std::size_t invalid_utf8_offset(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > text.size()) return i;
    uint32_t cp = len == 1 ? c : (c & (0x7F >> len));
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d >> 6) != 2) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace mirror::data
