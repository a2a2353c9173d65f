// test_tokenizer.cc — mirror/data/tokenizer.h in one process: every tokenizer round-trips text, decodes
// compositionally (token by token == all at once), and is rebuilt from its blobs alone with the same encoding;
// sentencepiece merges (fewer tokens than bytes; ids beyond the 257 meta and byte pieces); gpt2 from a tiny
// hand-written vocabulary gives the ids worked out by hand; unknown names and missing files are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "mirror/data/tokenizer.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using test::TempDir;

std::string corpus() {
  std::string t;
  const char* lines[] = {"the king's men don't say what they've seen", "naïve café 日本語 and Ωmega",
                         "number 42 and 1999 items!! (quoted)", "  trailing   spaces  ", "\tTabbed line"};
  for (int i = 0; i < 60; ++i) t += std::string(lines[i % 5]) + "\n";
  return t;
}

// Decoding one token at a time gives what decoding all of them gives, and both give `text` back.
void expect_round_trip(const Tokenizer& tok, const std::string& text) {
  const std::vector<std::int32_t> ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text) << tok.name();
  std::string one_by_one;
  for (std::int32_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, tok.vocab_size());
    one_by_one += tok.decode(std::span<const std::int32_t>(&id, 1));
  }
  EXPECT_EQ(one_by_one, text) << tok.name() << ": decode is not compositional";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Tokenizer, BytesIsEveryByte) {
  auto tok = make_tokenizer(TokenizerSpec{}, "");
  EXPECT_EQ(tok->vocab_size(), 256);
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  expect_round_trip(*tok, all);
  EXPECT_EQ(tok->encode("\xff" "a"), (std::vector<std::int32_t>{255, 97}));
  EXPECT_TRUE(tok->blobs().empty());
}

TEST(Tokenizer, SentencePieceTrainsMergesAndReloadsFromItsModel) {
  const std::string text = corpus();
  auto tok = make_tokenizer(TokenizerSpec{"sentencepiece", 400}, text);
  EXPECT_EQ(tok->vocab_size(), 400);
  const auto ids = tok->encode(text);
  EXPECT_LT(ids.size(), text.size() / 3) << "BPE should merge: " << ids.size() << " tokens for " << text.size()
                                         << " bytes";
  EXPECT_GT(*std::max_element(ids.begin(), ids.end()), 257);
  expect_round_trip(*tok, text);
  expect_round_trip(*tok, "unseen ☃ snowman \x01 and \n\n lines");  // byte fallback
  ASSERT_EQ(tok->blobs().size(), 1u);
  auto again = load_tokenizer("sentencepiece", tok->blobs());
  EXPECT_EQ(again->encode(text), ids);
  EXPECT_NE(error_of([&] { load_tokenizer("sentencepiece", {}); }).find("needs its file 'model'"), std::string::npos);
  EXPECT_NE(error_of([&] { load_tokenizer("sentencepiece", {{"model", "junk"}}); }).find("not a SentencePiece model"),
            std::string::npos);
}

// GPT-2's byte characters: 'a' is itself, ' ' is U+0120 'Ġ'. The merges: "Ġ a" (rank 0), then "Ġa b".
void write_gpt2_merges(const TempDir& dir) {
  std::ofstream(dir.file("merges.txt")) << "#version: 0.2\n\xC4\xA0 a\n\xC4\xA0" "a b\n";
}

TEST(Tokenizer, Gpt2MergesByRankFromItsFiles) {
  TempDir dir;
  // vocab.json built from GPT-2's byte map (printable bytes are themselves, the rest U+0100 onwards in order),
  // each byte's id the byte; then "Ġa" 256, "Ġab" 257 and a special token.
  std::string vocab = "{";
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const int cp = printable ? b : next++;
    char esc[32];
    std::snprintf(esc, sizeof(esc), "\"\\u%04x\": %d,", cp, b);
    vocab += esc;
  }
  vocab += "\"\\u0120a\": 256, \"\\u0120ab\": 257, \"<|endoftext|>\": 258}";
  std::ofstream(dir.file("vocab.json")) << vocab;
  write_gpt2_merges(dir);
  auto tok = make_tokenizer(TokenizerSpec{"gpt2", 0, dir.file("vocab.json"), dir.file("merges.txt")}, "");
  EXPECT_EQ(tok->vocab_size(), 259);
  // " ab abc" -> pieces " ab", " abc" -> [Ġab] [Ġab, c]; "a  b" -> "a", " ", " b" (\s+(?!\S) keeps one space back).
  EXPECT_EQ(tok->encode(" ab abc"), (std::vector<std::int32_t>{257, 257, 'c'}));
  EXPECT_EQ(tok->encode("a  b"), (std::vector<std::int32_t>{'a', ' ', ' ', 'b'}));
  EXPECT_EQ(tok->decode(std::vector<std::int32_t>{258}), "<|endoftext|>");
  expect_round_trip(*tok, corpus());
  const char not_utf8[] = "not utf-8: \xff\xfe ab \xc3";
  expect_round_trip(*tok, std::string(not_utf8, sizeof(not_utf8) - 1));
  auto again = load_tokenizer("gpt2", tok->blobs());
  EXPECT_EQ(again->encode(corpus()), tok->encode(corpus()));
  EXPECT_NE(error_of([&] { load_tokenizer("gpt2", {{"vocab.json", vocab}}); }).find("needs its file 'merges.txt'"),
            std::string::npos);
}

TEST(Tokenizer, UnknownNamesAreRefusedNamingTheKnownOnes) {
  const std::string e = error_of([] { load_tokenizer("wordpiece", {}); });
  EXPECT_NE(e.find("unknown tokenizer 'wordpiece'"), std::string::npos) << e;
  EXPECT_NE(e.find("'bytes', 'sentencepiece', 'gpt2'"), std::string::npos) << e;
  EXPECT_EQ(known_tokenizers(), (std::vector<std::string>{"bytes", "sentencepiece", "gpt2"}));
}

}  // namespace
}  // namespace mirror::data
