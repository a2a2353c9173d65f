// text_command.cc — flags of `mirror-data text` and the summary it prints.
#include "text_command.h"

#include <cstdio>

#include "mirror/cli_checks.h"

TextCommand::TextCommand(CLI::App& app) {
  mirror::data::TextOptions& o = options_;
  cmd_ = app.add_subcommand("text", "Tokenize text files (concatenated in the order given) into a token dataset for "
                                    "language models: of n bytes the first floor(n*(1-f)) train, the rest test");
  cmd_->add_option("files", inputs_, "Text files")->required();
  cmd_->add_option("--out", out_, "Output file (.h5)")->required();
  cmd_->add_option("--tokenizer", o.tokenizer, "Tokenizer: 'bytes' (every byte a token, vocabulary 256), "
                                               "'sentencepiece' (a BPE model trained on the train split; --vocab-size), "
                                               "'gpt2' (GPT-2's byte-level BPE; --vocab, --merges)")
      ->capture_default_str();
  cmd_->add_option("--vocab-size", o.vocab_size, "sentencepiece: the vocabulary to train (more than 257)")
      ->check(mirror::cli::non_negative_integer());
  cmd_->add_option("--vocab", o.vocab_file, "gpt2: Hugging Face's vocab.json");
  cmd_->add_option("--merges", o.merges_file, "gpt2: Hugging Face's merges.txt");
  cmd_->add_option("--test-fraction", o.test_fraction, "Fraction f of the bytes (the end of the text) that is the "
                                                       "test split, 0 < f < 1")->capture_default_str();
  cmd_->add_option("--chunk", o.chunk_tokens, "Tokens per HDF5 chunk (0: 65536)")
      ->check(mirror::cli::non_negative_integer());
}

void TextCommand::run() {
  const mirror::data::TextSummary s = mirror::data::write_text_dataset(out_, inputs_, options_);
  std::printf("tokenized %zu file(s) with '%s' (vocabulary %lld, %s): %lld train + %lld test tokens "
              "from %lld + %lld bytes\n", inputs_.size(), s.tokenizer.c_str(), static_cast<long long>(s.vocab_size),
              s.token_bytes == 2 ? "uint16" : "uint32", static_cast<long long>(s.train_tokens),
              static_cast<long long>(s.test_tokens), static_cast<long long>(s.train_bytes),
              static_cast<long long>(s.test_bytes));
  std::printf("wrote %s\n", s.file.c_str());
}
