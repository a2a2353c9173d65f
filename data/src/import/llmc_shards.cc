// llmc_shards.cc — mirror/data/llmc.h: llm.c's `.bin` token shards found, their headers checked, and their tokens
// streamed in chunks into a TokenWriter on a temporary name that is renamed into place at the end.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <vector>

#include "mirror/data/llmc.h"
#include "mirror/data/token_writer.h"
#include "mirror/error.h"

namespace mirror::data {

namespace fs = std::filesystem;

namespace {

constexpr std::int32_t kMagic = 20240520;
constexpr std::int32_t kVersion = 1;
constexpr std::int64_t kHeaderWords = 256;
constexpr std::int64_t kHeaderBytes = kHeaderWords * 4;
constexpr std::int64_t kGpt2Vocab = 50257;
constexpr std::int64_t kChunkTokens = 1 << 20;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The `.bin` files of `dir` whose names contain `part` ("" for all), sorted by name.
std::vector<std::string> bin_files(const std::string& dir, const std::string& part) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && ends_with(name, ".bin") && (part.empty() || name.find(part) != std::string::npos))
      files.push_back(e.path().string());
  }
  MIRROR_CHECK(!ec, kIo, "cannot list directory '" << dir << "': " << ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// The token count of shard `path`, its header and size checked.
std::int64_t shard_tokens(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  MIRROR_CHECK(f.good(), kIo, "cannot open llm.c shard '" << path << "'");
  std::array<std::int32_t, kHeaderWords> header{};
  f.read(reinterpret_cast<char*>(header.data()), kHeaderBytes);
  MIRROR_CHECK(f.gcount() == kHeaderBytes, kFormat,
               "'" << path << "' is shorter than llm.c's header of " << kHeaderBytes << " bytes");
  MIRROR_CHECK(header[0] == kMagic, kFormat,
               "'" << path << "' has magic " << header[0] << "; an llm.c token shard starts with " << kMagic);
  MIRROR_CHECK(header[1] == kVersion, kFormat,
               "'" << path << "' is llm.c shard version " << header[1] << "; this reader knows version " << kVersion
                   << " (uint16 GPT-2 tokens)");
  const std::int64_t tokens = header[2];
  const auto size = static_cast<std::int64_t>(fs::file_size(path));
  MIRROR_CHECK(tokens >= 0 && size == kHeaderBytes + 2 * tokens, kFormat,
               "'" << path << "' says it holds " << tokens << " tokens (" << kHeaderBytes + 2 * tokens
                   << " bytes with the header) but is " << size << " bytes long");
  return tokens;
}

std::int64_t total_tokens(const std::vector<std::string>& files) {
  std::int64_t n = 0;
  for (const std::string& f : files) n += shard_tokens(f);
  return n;
}

// Streams the tokens of `files` into `split` of `writer`, each checked against the vocabulary.
void copy_split(TokenWriter& writer, const std::string& split, const std::vector<std::string>& files) {
  std::vector<std::uint16_t> raw;
  std::vector<std::uint32_t> tokens;
  for (const std::string& path : files) {
    std::ifstream f(path, std::ios::binary);
    f.seekg(kHeaderBytes);
    std::int64_t left = shard_tokens(path), position = 0;
    while (left > 0) {
      const std::int64_t n = std::min(left, kChunkTokens);
      raw.resize(static_cast<std::size_t>(n));
      f.read(reinterpret_cast<char*>(raw.data()), n * 2);
      MIRROR_CHECK(f.gcount() == n * 2, kIo, "reading '" << path << "' stopped at token " << position);
      tokens.assign(raw.begin(), raw.end());
      for (std::int64_t i = 0; i < n; ++i)
        MIRROR_CHECK(tokens[static_cast<std::size_t>(i)] < kGpt2Vocab, kFormat,
                     "'" << path << "': token " << position + i << " is " << tokens[static_cast<std::size_t>(i)]
                         << ", outside GPT-2's vocabulary of " << kGpt2Vocab);
      writer.append(split, tokens.data(), n);
      left -= n;
      position += n;
    }
  }
}

}  // namespace

bool is_llmc_source(const std::string& source) {
  std::error_code ec;
  if (fs::is_directory(source, ec)) return !bin_files(source, "_train").empty();
  return ends_with(source, ".bin");
}

LlmcImport plan_llmc_import(const std::string& source, const std::string& test_source) {
  LlmcImport plan;
  std::error_code ec;
  const bool dir = fs::is_directory(source, ec);
  plan.train = dir ? bin_files(source, "_train") : std::vector<std::string>{source};
  if (!test_source.empty())
    plan.test = fs::is_directory(test_source, ec) ? bin_files(test_source, "") : std::vector<std::string>{test_source};
  else if (dir)
    plan.test = bin_files(source, "_val");
  MIRROR_CHECK(!plan.train.empty(), kInvalidArgument, "no llm.c train shards (*_train*.bin) in '" << source << "'");
  MIRROR_CHECK(!plan.test.empty(), kInvalidArgument,
               "no llm.c test shards for '" << source << "': a directory needs *_val*.bin files, or give --test FILE");
  plan.train_tokens = total_tokens(plan.train);
  plan.test_tokens = total_tokens(plan.test);
  MIRROR_CHECK(plan.train_tokens > 0 && plan.test_tokens > 0, kInvalidArgument,
               "llm.c shards of '" << source << "' hold " << plan.train_tokens << " train and " << plan.test_tokens
                                   << " test tokens; each split needs at least one");
  return plan;
}

void write_llmc_dataset(const std::string& out, const LlmcImport& plan) {
  const fs::path target(out);
  std::string name(1, '.');  // a hidden temporary beside the output
  name += target.filename().string();
  name += ".llmc-" + std::to_string(::getpid());
  const fs::path tmp = (target.has_parent_path() ? target.parent_path() : fs::path(".")) / name;
  TokenHeader header;
  header.vocab_size = kGpt2Vocab;
  header.tokenizer = "gpt2";
  try {
    {
      TokenWriter writer(tmp.string(), header, plan.train_tokens, plan.test_tokens);
      copy_split(writer, "train", plan.train);
      copy_split(writer, "test", plan.test);
      writer.close();
    }
    std::error_code ec;
    fs::rename(tmp, target, ec);
    MIRROR_CHECK(!ec, kIo, "cannot rename '" << tmp.string() << "' to '" << out << "': " << ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

}  // namespace mirror::data
