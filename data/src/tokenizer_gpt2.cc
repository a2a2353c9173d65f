// tokenizer_gpt2.cc — the "gpt2" tokenizer: GPT-2's byte-level BPE from Hugging Face's vocab.json (token ->
// id) and merges.txt (one merge "a b" a line, by rank; an optional "#version" first line). The text is split by
// GPT-2's pattern (PCRE2 with UTF and UCP, over each run of valid UTF-8; a run of bytes that are not valid UTF-8
// is a piece of its own, so any bytes round-trip); each piece's bytes map to GPT-2's printable characters
// (bytes_to_unicode), merge by rank, and the symbols are looked up in the vocabulary. Checked on load: every
// byte's character is a token, every merge's two parts and their concatenation are tokens, ids are unique.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "mirror/error.h"
#include "tokenizer_rows.h"

namespace mirror::data {

namespace {

constexpr const char* kVocabBlob = "vocab.json";
constexpr const char* kMergesBlob = "merges.txt";
constexpr const char* kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {  // GPT-2's byte characters are all below U+0800
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for U+0100 onwards, in byte order.
std::vector<std::string> byte_characters() {
  std::vector<std::string> chars(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    chars[b] = utf8_of(printable ? b : next++);
  }
  return chars;
}

std::string read_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  MIRROR_CHECK(in.good(), kIo, "cannot read " << flag << " file '" << path << "' (--tokenizer gpt2)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Pcre2Deleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

class Gpt2Tokenizer final : public Tokenizer {
 public:
  // `where_vocab`/`where_merges` name the files in messages (a path, or the stored blob).
  Gpt2Tokenizer(std::string vocab, std::string merges, const std::string& where_vocab,
                const std::string& where_merges)
      : vocab_json_(std::move(vocab)), merges_txt_(std::move(merges)), byte_chars_(byte_characters()) {
    parse_vocab(where_vocab);
    parse_merges(where_merges);
    compile_pattern();
  }
  std::string name() const override { return "gpt2"; }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(tokens_.size()); }
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> tokens) const override;
  std::vector<TokenizerBlob> blobs() const override { return {{kVocabBlob, vocab_json_}, {kMergesBlob, merges_txt_}}; }

 private:
  void parse_vocab(const std::string& where);
  void parse_merges(const std::string& where);
  void compile_pattern();
  std::int32_t id_of(const std::string& token, const std::string& where, const std::string& what) const;
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
  void encode_valid(std::string_view text, std::vector<std::int32_t>& out) const;

  std::string vocab_json_, merges_txt_;
  std::vector<std::string> byte_chars_;        // byte -> its character (UTF-8)
  std::unordered_map<std::string, int> byte_of_char_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::vector<std::string> tokens_;            // id -> token ("" for an id vocab.json does not use)
  std::unordered_map<std::string, int> ranks_;  // "a b" -> merge rank
  std::unique_ptr<pcre2_code, Pcre2Deleter> pattern_;
};

void Gpt2Tokenizer::parse_vocab(const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(vocab_json_, nullptr, false);
  MIRROR_CHECK(!j.is_discarded() && j.is_object() && !j.empty(), kFormat,
               where << " is not a JSON object of tokens to ids; expected Hugging Face's vocab.json, e.g. "
                        "{\"!\": 0, \"\\\"\": 1, ...}");
  std::int64_t max_id = -1;
  for (const auto& [token, id] : j.items()) {
    MIRROR_CHECK(id.is_number_integer() && id.get<std::int64_t>() >= 0 && id.get<std::int64_t>() < INT32_MAX, kFormat,
                 where << ": token '" << token << "' has the id " << id.dump()
                       << "; expected an integer in [0, 2^31-1)");
    const auto v = id.get<std::int32_t>();
    MIRROR_CHECK(ids_.emplace(token, v).second, kFormat, where << ": token '" << token << "' appears twice");
    max_id = std::max<std::int64_t>(max_id, v);
  }
  tokens_.assign(static_cast<std::size_t>(max_id + 1), std::string());
  for (const auto& [token, id] : ids_) {
    MIRROR_CHECK(tokens_[static_cast<std::size_t>(id)].empty(), kFormat,
                 where << ": id " << id << " is given to both '" << tokens_[static_cast<std::size_t>(id)] << "' and '"
                       << token << "'; expected one token per id");
    tokens_[static_cast<std::size_t>(id)] = token;
  }
  for (int b = 0; b < 256; ++b) {
    byte_of_char_[byte_chars_[static_cast<std::size_t>(b)]] = b;
    MIRROR_CHECK(ids_.count(byte_chars_[static_cast<std::size_t>(b)]) == 1, kFormat,
                 where << " lacks the token '" << byte_chars_[static_cast<std::size_t>(b)] << "' of byte " << b
                       << "; a byte-level BPE vocabulary holds all 256 byte tokens");
  }
}

std::int32_t Gpt2Tokenizer::id_of(const std::string& token, const std::string& where, const std::string& what) const {
  const auto it = ids_.find(token);
  MIRROR_CHECK(it != ids_.end(), kFormat, where << ": " << what << " names the token '" << token
                                                << "', which is not in vocab.json");
  return it->second;
}

void Gpt2Tokenizer::parse_merges(const std::string& where) {
  std::istringstream in(merges_txt_);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::size_t space = line.find(' ');
    MIRROR_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size() &&
                     line.find(' ', space + 1) == std::string::npos,
                 kFormat, where << " line " << line_no << " is '" << line
                                << "'; expected two tokens separated by one space (\"a b\")");
    const std::string a = line.substr(0, space), b = line.substr(space + 1);
    const std::string what = "line " + std::to_string(line_no) + " ('" + line + "')";
    id_of(a, where, what);
    id_of(b, where, what);
    id_of(a + b, where, what + ", merged,");
    ranks_.emplace(line, static_cast<int>(ranks_.size()));
  }
}

void Gpt2Tokenizer::compile_pattern() {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pattern_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr));
  MIRROR_CHECK(pattern_ != nullptr, kInternal, "PCRE2 cannot compile GPT-2's pattern (error " << error << " at "
                                                                                             << offset << ")");
}

// BPE on one piece: its bytes as characters, the lowest-ranked adjacent pair merged (all its occurrences, left
// to right) until no pair has a rank; then each symbol's id.
void Gpt2Tokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
  std::vector<std::string> symbols;
  for (char c : piece) symbols.push_back(byte_chars_[static_cast<unsigned char>(c)]);
  while (symbols.size() > 1) {
    int best = std::numeric_limits<int>::max();
    std::string best_pair;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = ranks_.find(symbols[i] + " " + symbols[i + 1]);
      if (it != ranks_.end() && it->second < best) best = it->second, best_pair = it->first;
    }
    if (best_pair.empty()) break;
    std::vector<std::string> merged;
    for (std::size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] + " " + symbols[i + 1] == best_pair) {
        merged.push_back(symbols[i] + symbols[i + 1]);
        ++i;
      } else {
        merged.push_back(symbols[i]);
      }
    }
    symbols.swap(merged);
  }
  for (const std::string& s : symbols) out.push_back(ids_.at(s));  // checked on load: every merge result is a token
}

// The pattern's pieces of `text`, valid UTF-8 (checked by the caller, so PCRE2 does not check it again on every
// call: that would be quadratic in the text's length).
void Gpt2Tokenizer::encode_valid(std::string_view text, std::vector<std::int32_t>& out) const {
  std::unique_ptr<pcre2_match_data, Pcre2Deleter> match(pcre2_match_data_create_from_pattern(pattern_.get(), nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(pattern_.get(), subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    MIRROR_CHECK(rc >= 0 || rc == PCRE2_ERROR_NOMATCH, kInternal, "PCRE2 match failed with code " << rc);
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.get());
    const std::size_t start = rc >= 0 ? ov[0] : text.size(), end = rc >= 0 ? ov[1] : text.size();
    if (start > pos) encode_piece(text.substr(pos, start - pos), out);  // never for GPT-2's pattern: it matches all
    if (end > start) encode_piece(text.substr(start, end - start), out);
    pos = end > pos ? end : pos + 1;
  }
}

// Valid UTF-8 runs go through the pattern; each run of bytes that are not valid UTF-8 is a piece of its own.
std::vector<std::int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  while (!text.empty()) {
    const std::size_t bad = std::min(invalid_utf8_offset(text), text.size());
    encode_valid(text.substr(0, bad), out);
    std::size_t good = bad;  // the invalid run ends where a valid character starts
    while (good < text.size() && invalid_utf8_offset(text.substr(good, 4)) == 0) ++good;
    if (good > bad) encode_piece(text.substr(bad, good - bad), out);
    text.remove_prefix(good);
  }
  return out;
}

std::string Gpt2Tokenizer::decode(std::span<const std::int32_t> tokens) const {
  std::string text;
  for (std::int32_t t : tokens) {
    MIRROR_CHECK(t >= 0 && t < vocab_size() && !tokens_[static_cast<std::size_t>(t)].empty(), kInvalidArgument,
                 "token " << t << " is not in the vocabulary of tokenizer gpt2 (ids 0.." << vocab_size() - 1 << ")");
    const std::string& token = tokens_[static_cast<std::size_t>(t)];
    std::string bytes;
    for (std::size_t i = 0; i < token.size();) {
      const std::size_t len = (static_cast<unsigned char>(token[i]) & 0xE0) == 0xC0 ? 2 : 1;
      const auto it = byte_of_char_.find(token.substr(i, len));
      if (it == byte_of_char_.end()) {  // a special token such as <|endoftext|>: its text as it is
        bytes = token;
        break;
      }
      bytes.push_back(static_cast<char>(it->second));
      i += len;
    }
    text += bytes;
  }
  return text;
}

}  // namespace

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(const TokenizerSpec& spec, std::string_view) {
  MIRROR_CHECK(!spec.vocab_file.empty() && !spec.merges_file.empty(), kInvalidArgument,
               "--tokenizer gpt2 needs --vocab FILE and --merges FILE (Hugging Face's vocab.json and merges.txt); "
                   << (spec.vocab_file.empty() ? "--vocab" : "--merges") << " is missing");
  return std::make_unique<Gpt2Tokenizer>(read_file(spec.vocab_file, "--vocab"), read_file(spec.merges_file, "--merges"),
                                         "--vocab file '" + spec.vocab_file + "'",
                                         "--merges file '" + spec.merges_file + "'");
}

std::unique_ptr<Tokenizer> load_gpt2_tokenizer(const std::vector<TokenizerBlob>& blobs) {
  return std::make_unique<Gpt2Tokenizer>(find_blob(blobs, kVocabBlob, "gpt2").bytes,
                                         find_blob(blobs, kMergesBlob, "gpt2").bytes,
                                         "the stored tokenizer file 'vocab.json'", "the stored tokenizer file 'merges.txt'");
}

}  // namespace mirror::data
