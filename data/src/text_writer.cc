// text_writer.cc — write_text_dataset (`mirror-data text`): the tokenizer table, the split rule, streaming
// the input files through the tokenizer into a TokenWriter on a temporary name, and the final rename.
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

// One row per tokenizer; later ones (GPT-2's BPE, SentencePiece models) add a row and an encoder.
struct TokenizerRow {
  const char* name;
  int64_t vocab_size;
};
constexpr TokenizerRow kTokenizers[] = {
    {"bytes", 256},  // every byte of the text is a token
};

const TokenizerRow& find_tokenizer(const std::string& name) {
  for (const TokenizerRow& row : kTokenizers) {
    if (name == row.name) return row;
  }
  std::ostringstream known;
  for (const std::string& k : known_tokenizers()) known << (known.tellp() > 0 ? ", " : "") << "'" << k << "'";
  MIRROR_THROW(kInvalidArgument, "unknown tokenizer '" << name << "'; known tokenizers: " << known.str());
}

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

// The size of an input file, after checking that it is a readable regular file.
int64_t input_size(const std::string& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  MIRROR_CHECK(fs::exists(st), kIo, "input file '" << file << "' does not exist");
  MIRROR_CHECK(fs::is_regular_file(st), kIo, "input '" << file << "' is not a regular file; expected a text file");
  std::ifstream in(file, std::ios::binary);
  MIRROR_CHECK(in.good(), kIo, "cannot read input file '" << file << "': " << std::strerror(errno));
  const auto size = fs::file_size(file, ec);
  MIRROR_CHECK(!ec, kIo, "cannot read the size of input file '" << file << "': " << ec.message());
  return static_cast<int64_t>(size);
}

}  // namespace

std::vector<std::string> known_tokenizers() {
  std::vector<std::string> names;
  for (const TokenizerRow& row : kTokenizers) names.emplace_back(row.name);
  return names;
}

int64_t text_train_tokens(int64_t tokens, double test_fraction) {
  return static_cast<int64_t>(std::floor(static_cast<double>(tokens) * (1.0 - test_fraction)));
}

TextSummary write_text_dataset(const std::string& out, const std::vector<std::string>& inputs,
                               const TextOptions& options) {
  const TokenizerRow& tokenizer = find_tokenizer(options.tokenizer);
  const double f = options.test_fraction;
  MIRROR_CHECK(f > 0 && f < 1, kInvalidArgument,
               "--test-fraction must be strictly between 0 and 1, got " << f << " (both splits need tokens)");
  MIRROR_CHECK(!inputs.empty(), kInvalidArgument, "no input files; expected one or more text files");
  MIRROR_CHECK(options.chunk_tokens >= 0, kInvalidArgument, "--chunk must be >= 0, got " << options.chunk_tokens);
  // The bytes tokenizer makes one token per byte, so the sizes give n (and the split point) before reading.
  std::vector<int64_t> sizes;
  int64_t n = 0;
  for (const std::string& file : inputs) {
    sizes.push_back(input_size(file));
    n += sizes.back();
  }
  MIRROR_CHECK(n > 0, kInvalidArgument, "the text is empty: " << inputs.size() << " input file(s) hold 0 bytes");
  const int64_t train = text_train_tokens(n, f);
  MIRROR_CHECK(train >= 1 && train < n, kInvalidArgument,
               "the text is too short: " << n << " tokens with --test-fraction " << f << " give " << train
                                         << " train and " << n - train << " test tokens; both splits need at least one");

  TempOutput tmp(out);
  TokenWriter writer(tmp.path(), TokenHeader{tokenizer.vocab_size, tokenizer.name}, train, n - train,
                     options.chunk_tokens);
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  std::vector<char> bytes(kBlock);
  std::vector<uint32_t> tokens(kBlock);
  int64_t done = 0;  // tokens appended over all files
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::ifstream in(inputs[i], std::ios::binary);
    MIRROR_CHECK(in.good(), kIo, "cannot read input file '" << inputs[i] << "': " << std::strerror(errno));
    int64_t got = 0;
    while (in) {
      in.read(bytes.data(), static_cast<std::streamsize>(kBlock));
      const auto k = static_cast<int64_t>(in.gcount());
      MIRROR_CHECK(got + k <= sizes[i], kIo, "input file '" << inputs[i] << "' grew while it was read");
      for (int64_t j = 0; j < k; ++j) tokens[static_cast<std::size_t>(j)] = static_cast<unsigned char>(bytes[j]);
      const int64_t to_train = std::max<int64_t>(0, std::min(k, train - done));
      writer.append("train", tokens.data(), to_train);
      writer.append("test", tokens.data() + to_train, k - to_train);
      done += k;
      got += k;
    }
    MIRROR_CHECK(in.eof() && got == sizes[i], kIo,
                 "cannot read input file '" << inputs[i] << "': read " << got << " of " << sizes[i] << " bytes");
  }
  writer.close();
  tmp.commit();
  TextSummary s;
  s.file = out;
  s.tokenizer = tokenizer.name;
  s.vocab_size = tokenizer.vocab_size;
  s.train_tokens = train;
  s.test_tokens = n - train;
  s.token_bytes = tokenizer.vocab_size <= kMaxUInt16Vocab ? 2 : 4;
  return s;
}

}  // namespace mirror::data
