// tokenizer_sentencepiece.cc — the "sentencepiece" tokenizer: a BPE model trained with the SentencePiece library
// on the train split's text, in memory (its lines through a SentenceIterator). Trained so that text round-trips:
// byte_fallback (a character outside the vocabulary becomes its UTF-8 bytes <0x00>..<0xFF>), identity
// normalization, no dummy prefix, extra whitespace kept; one control piece <unk> (id 0), no <s>, </s> or <pad>.
// Its one file, "model", is the serialized ModelProto. Decoding is done here piece by piece (a byte piece is its
// byte, U+2581 a space) so that it is compositional and byte-exact, unlike the library's, which merges pieces.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <string>
#include <unordered_map>

#include "mirror/error.h"
#include "tokenizer_rows.h"

namespace mirror::data {

namespace {

constexpr const char* kModelBlob = "model";
constexpr std::int64_t kMetaPieces = 1 + 256;  // <unk> and the 256 byte pieces

// The lines of the train split (without their '\n'; empty lines skipped), handed to the trainer one by one.
class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::string_view text) : text_(text) { Next(); }
  bool done() const override { return done_; }
  void Next() override {
    while (pos_ < text_.size()) {
      std::size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      line_.assign(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      if (!line_.empty()) return;
    }
    done_ = true;
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::string line_;
  bool done_ = false;
};

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(std::string model) : model_(std::move(model)) {
    const auto status = processor_.LoadFromSerializedProto(model_);
    MIRROR_CHECK(status.ok(), kFormat, "tokenizer 'sentencepiece': its file 'model' is not a SentencePiece model ("
                                           << status.ToString() << ")");
  }
  std::string name() const override { return "sentencepiece"; }
  std::int64_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::vector<std::int32_t> encode(std::string_view text) const override {
    std::vector<std::int32_t> tokens;
    std::vector<int> ids;
    // Line by line: no piece holds a '\n' (the model was trained on lines), so this equals encoding the whole text.
    for (std::size_t pos = 0; pos < text.size();) {
      std::size_t end = text.find('\n', pos);
      end = end == std::string_view::npos ? text.size() : end + 1;
      const auto status = processor_.Encode(text.substr(pos, end - pos), &ids);
      MIRROR_CHECK(status.ok(), kInvalidArgument, "sentencepiece cannot encode the text at byte " << pos << ": "
                                                                                                  << status.ToString());
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      pos = end;
    }
    return tokens;
  }
  std::string decode(std::span<const std::int32_t> tokens) const override {
    std::string text;
    for (std::int32_t t : tokens) append_piece(t, text);
    return text;
  }
  std::vector<TokenizerBlob> blobs() const override { return {{kModelBlob, model_}}; }

 private:
  void append_piece(std::int32_t id, std::string& text) const {
    MIRROR_CHECK(id >= 0 && id < processor_.GetPieceSize(), kInvalidArgument,
                 "token " << id << " is outside the vocabulary [0, " << processor_.GetPieceSize()
                          << ") of tokenizer sentencepiece");
    const std::string& piece = processor_.IdToPiece(id);
    if (processor_.IsByte(id)) {  // "<0xAB>"
      text.push_back(static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    } else if (processor_.IsUnknown(id)) {
      text += " \xE2\x81\x87 ";  // the library's surface for <unk>
    } else if (!processor_.IsControl(id)) {
      for (std::size_t i = 0; i < piece.size(); ++i) {
        if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {  // U+2581, SentencePiece's space
          text.push_back(' ');
          i += 2;
        } else {
          text.push_back(piece[i]);
        }
      }
    }
  }

  std::string model_;
  sentencepiece::SentencePieceProcessor processor_;
};

std::unordered_map<std::string, std::string> trainer_args(std::int64_t vocab_size) {
  return {{"model_type", "bpe"},           {"vocab_size", std::to_string(vocab_size)},
          {"byte_fallback", "true"},       {"character_coverage", "1.0"},
          {"normalization_rule_name", "identity"}, {"add_dummy_prefix", "false"},
          {"remove_extra_whitespaces", "false"},   {"unk_id", "0"},
          {"bos_id", "-1"},                {"eos_id", "-1"},
          {"pad_id", "-1"},                {"max_sentence_length", "65536"},
          {"num_threads", "2"},            {"minloglevel", "2"},
          {"model_prefix", ""}};
}

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const TokenizerSpec& spec, std::string_view train_text) {
  MIRROR_CHECK(spec.vocab_size > 0, kInvalidArgument,
               "--tokenizer sentencepiece needs --vocab-size N, the vocabulary to train (more than " << kMetaPieces
                   << ": <unk> and the 256 byte pieces, plus the characters of the text)");
  MIRROR_CHECK(spec.vocab_size > kMetaPieces, kInvalidArgument,
               "--vocab-size " << spec.vocab_size << " is too small for --tokenizer sentencepiece: " << kMetaPieces
                               << " ids go to <unk> and the 256 byte pieces; expected more than " << kMetaPieces);
  const std::size_t bad = invalid_utf8_offset(train_text);
  MIRROR_CHECK(bad == std::string_view::npos, kInvalidArgument,
               "the train split is not valid UTF-8 (byte " << bad << "); --tokenizer sentencepiece needs UTF-8 text "
                                                           "(--tokenizer bytes takes any bytes)");
  LineIterator lines(train_text);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(trainer_args(spec.vocab_size), &lines, &model);
  MIRROR_CHECK(status.ok(), kInvalidArgument,
               "SentencePiece could not train a BPE vocabulary of " << spec.vocab_size << " pieces on the train split ("
                   << train_text.size() << " bytes): " << status.ToString());
  return std::make_unique<SentencePieceTokenizer>(std::move(model));
}

std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::vector<TokenizerBlob>& blobs) {
  return std::make_unique<SentencePieceTokenizer>(find_blob(blobs, kModelBlob, "sentencepiece").bytes);
}

}  // namespace mirror::data
