// text_command.h — the `mirror-data text` subcommand: its flags (parsed once into TextOptions) and its
// summary. See docs/dataset-format.md, "Token datasets".
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "mirror/data/text.h"

class TextCommand {
 public:
  explicit TextCommand(CLI::App& app);
  bool chosen() const { return cmd_->parsed(); }
  void run();  // throws mirror::Error

 private:
  CLI::App* cmd_;
  std::string out_;
  std::vector<std::string> inputs_;
  mirror::data::TextOptions options_;
};
