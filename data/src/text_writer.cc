// text_writer.cc — write_text_dataset (`mirror-data text`): reading the input files, the split rule on bytes,
// making the tokenizer from the train split, encoding each split (checked to decode back to its text) into a
// TokenWriter on a temporary name, and the final rename.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mirror/data/text.h"
#include "mirror/data/token_writer.h"
#include "mirror/error.h"
#include "token_dataset.h"

namespace mirror::data {

namespace fs = std::filesystem;

namespace {

// The output's temporary name: a hidden file next to it, removed unless commit() renamed it into place.
class TempOutput {
 public:
  explicit TempOutput(const std::string& out) : out_(out) {
    const fs::path p(out);
    std::string name(1, '.');
    name += p.stem().string();
    name += ".text-" + std::to_string(::getpid()) + ".h5";
    tmp_ = (p.has_parent_path() ? p.parent_path() / name : fs::path(name)).string();
  }
  ~TempOutput() {
    std::error_code ec;
    if (!committed_) fs::remove(tmp_, ec);
  }
  const std::string& path() const { return tmp_; }
  void commit() {
    std::error_code ec;
    fs::rename(tmp_, out_, ec);
    MIRROR_CHECK(!ec, kIo, "cannot rename '" << tmp_ << "' to '" << out_ << "': " << ec.message());
    committed_ = true;
  }

 private:
  std::string out_, tmp_;
  bool committed_ = false;
};

// Appends the contents of `file` to `text`, after checking that it is a readable regular file.
void append_file(const std::string& file, std::string& text) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  MIRROR_CHECK(fs::exists(st), kIo, "input file '" << file << "' does not exist");
  MIRROR_CHECK(fs::is_regular_file(st), kIo, "input '" << file << "' is not a regular file; expected a text file");
  std::ifstream in(file, std::ios::binary);
  MIRROR_CHECK(in.good(), kIo, "cannot read input file '" << file << "': " << std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  MIRROR_CHECK(!in.bad(), kIo, "cannot read input file '" << file << "': " << std::strerror(errno));
  text += s.str();
}

// The split's tokens, checked to decode back to exactly its text (the first differing byte is named).
std::vector<uint32_t> encode_split(const Tokenizer& tokenizer, std::string_view text, const char* split) {
  const std::vector<int32_t> ids = tokenizer.encode(text);
  const std::string back = tokenizer.decode(ids);
  if (back != text) {
    const auto diff = std::mismatch(back.begin(), back.end(), text.begin(), text.end());
    MIRROR_THROW(kInvalidArgument, "tokenizer '" << tokenizer.name() << "' does not round-trip the " << split
                                                 << " split: its tokens decode to other text from byte "
                                                 << diff.second - text.begin() << " of the split on (the text holds "
                                                 << "what the tokenizer cannot represent; --tokenizer bytes takes "
                                                 << "any bytes)");
  }
  return {ids.begin(), ids.end()};
}

void check_known_tokenizer(const std::string& name) {
  const std::vector<std::string> known = known_tokenizers();
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  std::ostringstream list;
  for (const std::string& k : known) list << (list.tellp() > 0 ? ", " : "") << "'" << k << "'";
  MIRROR_THROW(kInvalidArgument, "unknown tokenizer '" << name << "'; known tokenizers: " << list.str());
}

// Tokenizers of text (all but "bytes") get whole UTF-8 characters: a split point inside one moves back to its
// first byte (at most 3 bytes back; not at all in text that is not UTF-8 there).
int64_t character_boundary(std::string_view text, int64_t split, const std::string& tokenizer) {
  if (tokenizer == "bytes") return split;
  for (int64_t back = 0; back < 4 && split - back > 0; ++back) {
    if ((static_cast<unsigned char>(text[static_cast<std::size_t>(split - back)]) & 0xC0) != 0x80) return split - back;
  }
  return split;
}

}  // namespace

int64_t text_train_bytes(int64_t bytes, double test_fraction) {
  return static_cast<int64_t>(std::floor(static_cast<double>(bytes) * (1.0 - test_fraction)));
}

TextSummary write_text_dataset(const std::string& out, const std::vector<std::string>& inputs,
                               const TextOptions& options) {
  check_known_tokenizer(options.tokenizer);  // before the inputs are read
  const double f = options.test_fraction;
  MIRROR_CHECK(f > 0 && f < 1, kInvalidArgument,
               "--test-fraction must be strictly between 0 and 1, got " << f << " (both splits need tokens)");
  MIRROR_CHECK(!inputs.empty(), kInvalidArgument, "no input files; expected one or more text files");
  MIRROR_CHECK(options.chunk_tokens >= 0, kInvalidArgument, "--chunk must be >= 0, got " << options.chunk_tokens);
  std::string text;
  for (const std::string& file : inputs) append_file(file, text);
  const auto n = static_cast<int64_t>(text.size());
  MIRROR_CHECK(n > 0, kInvalidArgument, "the text is empty: " << inputs.size() << " input file(s) hold 0 bytes");
  const int64_t train = character_boundary(text, text_train_bytes(n, f), options.tokenizer);
  MIRROR_CHECK(train >= 1 && train < n, kInvalidArgument,
               "the text is too short: " << n << " bytes with --test-fraction " << f << " give " << train
                                         << " train and " << n - train << " test bytes; both splits need at least one");
  const std::string_view train_text = std::string_view(text).substr(0, static_cast<std::size_t>(train));
  const std::string_view test_text = std::string_view(text).substr(static_cast<std::size_t>(train));
  const std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(
      TokenizerSpec{options.tokenizer, options.vocab_size, options.vocab_file, options.merges_file}, train_text);
  const std::vector<uint32_t> train_tokens = encode_split(*tokenizer, train_text, "train");
  const std::vector<uint32_t> test_tokens = encode_split(*tokenizer, test_text, "test");

  TokenHeader header{tokenizer->vocab_size(), tokenizer->name(), train, n - train, tokenizer->blobs()};
  TempOutput tmp(out);
  const auto n_train = static_cast<int64_t>(train_tokens.size()), n_test = static_cast<int64_t>(test_tokens.size());
  TokenWriter writer(tmp.path(), header, n_train, n_test, options.chunk_tokens);
  writer.append("train", train_tokens.data(), n_train);
  writer.append("test", test_tokens.data(), n_test);
  writer.close();
  tmp.commit();
  TextSummary s;
  s.file = out;
  s.tokenizer = header.tokenizer;
  s.vocab_size = header.vocab_size;
  s.train_tokens = n_train;
  s.test_tokens = n_test;
  s.train_bytes = train;
  s.test_bytes = n - train;
  s.token_bytes = header.vocab_size <= kMaxUInt16Vocab ? 2 : 4;
  return s;
}

}  // namespace mirror::data
