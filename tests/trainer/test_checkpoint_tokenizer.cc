// test_checkpoint_tokenizer.cc — a checkpoint's tokenizer files (format version 5, /tokenizer): written and read
// back byte for byte (binary bytes included), a flipped byte in one caught by its CRC naming the file, and a file
// name that is not a plain name refused on write; and the tokenizer rebuilt from a checkpoint state alone.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "mirror/error.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/text_tokens.h"

namespace fs = std::filesystem;
using namespace mirror::train;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("mirror_test_ckpt_tok_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

CheckpointState language_model_state() {
  CheckpointState s;
  s.step = 7;
  s.model_spec = "gpt-nano";
  s.model_description = "(description)";
  s.sample_shape = {16};
  s.input_features = 16;
  s.num_classes = 300;
  s.optimizer_kind = "adamw";
  s.tokenizer = "sentencepiece";
  s.params = {NamedTensor{"wte.weight", {3, 2}, {1, 2, 3, 4, 5, 6}}};
  s.tokenizer_files = {{"model", std::string("SENTINEL-MODEL\0\x01\xff-BYTES", 23)}, {"vocab.json", "{\"a\": 0}"}};
  return s;
}

TEST(CheckpointTokenizer, FilesRoundTripByteForByte) {
  const fs::path dir = fresh_dir("rt");
  const std::string path = write_checkpoint(dir.string(), language_model_state());
  const CheckpointState r = read_checkpoint(path);
  EXPECT_EQ(r.format_version, 5);
  EXPECT_EQ(r.tokenizer, "sentencepiece");
  ASSERT_EQ(r.tokenizer_files.size(), 2u);
  EXPECT_EQ(r.tokenizer_files[0].name, "model");
  EXPECT_EQ(r.tokenizer_files[0].bytes, language_model_state().tokenizer_files[0].bytes);
  EXPECT_EQ(r.tokenizer_files[1].name, "vocab.json");
  EXPECT_EQ(r.tokenizer_files[1].bytes, "{\"a\": 0}");
  fs::remove_all(dir);
}

TEST(CheckpointTokenizer, AFlippedByteIsCaughtByItsChecksum) {
  const fs::path dir = fresh_dir("crc");
  const std::string path = write_checkpoint(dir.string(), language_model_state());
  std::string bytes((std::istreambuf_iterator<char>(std::ifstream(path, std::ios::binary).rdbuf())), {});
  const std::size_t at = bytes.find("SENTINEL-MODEL");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'X';
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    read_checkpoint(path);
    FAIL() << "a corrupt tokenizer file was read";
  } catch (const mirror::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/tokenizer/model: checksum mismatch"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(CheckpointTokenizer, ANameThatIsNotAPlainFileNameIsRefused) {
  const fs::path dir = fresh_dir("name");
  CheckpointState s = language_model_state();
  s.tokenizer_files.push_back({"../escape", "x"});
  EXPECT_THROW(write_checkpoint(dir.string(), s), mirror::Error);
  EXPECT_TRUE(fs::is_empty(dir)) << "a failed write left a file behind";
  fs::remove_all(dir);
}

TEST(CheckpointTokenizer, BytesNeedsNoFilesAndOtherTokenizersDo) {
  CheckpointState s;
  s.tokenizer = "bytes";
  EXPECT_EQ(checkpoint_tokenizer(s)->decode(std::vector<std::int32_t>{72, 105}), "Hi");
  s.tokenizer = "gpt2";
  try {
    checkpoint_tokenizer(s);
    FAIL() << "a gpt2 tokenizer without files was built";
  } catch (const mirror::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer files are stored"), std::string::npos) << e.what();
  }
}

}  // namespace
