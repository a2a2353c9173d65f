// import_command.h — the `mirror-data import` subcommand: its flags (parsed once into ImportOptions) and
// its report. See docs/dataset-format.md, "Importing your own data".
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "mirror/data/import.h"

class ImportCommand {
 public:
  explicit ImportCommand(CLI::App& app);
  bool chosen() const { return cmd_->parsed(); }
  void run();  // throws mirror::Error

 private:
  void run_llmc();  // llm.c token shards into a token dataset
  CLI::App* cmd_;
  std::string out_, layout_ = "nchw", x_dtype_;
  double x_scale_ = 0;
  mirror::data::ImportOptions options_;
};
