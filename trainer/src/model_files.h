// model_files.h — what the export and import of each format (model_interchange.cc, hf_gpt2.cc) share: the files
// an export writes, computed and checked before any is written; JSON files read with errors naming them; and a
// checkpoint made from named tensors checked against the model a description builds.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mirror/train/checkpoint.h"

namespace mirror::train {

struct ExportFiles {
  std::vector<NamedTensor> tensors;                          // -> model.safetensors, in this order
  std::map<std::string, std::string> metadata;               // its __metadata__
  std::vector<std::pair<std::string, std::string>> texts;    // other files: path in DIR ("a" or "d/a"), bytes
};

// The model's settings for an imported checkpoint; tensors by Mirror name (parameters and buffers).
struct ImportedModel {
  std::string description;                 // a model description (JSON text or a built-in's name)
  std::string model_spec;                  // "" : the canonical description
  std::vector<std::int64_t> sample_shape;
  std::int64_t num_classes = 0;
  std::string tokenizer;
  std::vector<NamedBlob> tokenizer_files;
  std::map<std::string, NamedTensor> tensors;
  std::string source, format;              // the directory and the format, for errors and config_json
};

// The hf-gpt2 format (hf_gpt2.cc).
ExportFiles hf_gpt2_export(const CheckpointState& state);
ImportedModel hf_gpt2_import(const std::string& dir);

// `dir`/`name` as a JSON object; kIo when missing, kFormat naming the file when not a JSON object.
nlohmann::json read_json_file(const std::string& dir, const std::string& name);
// The bytes of `dir`/`name`; kIo naming it when it cannot be read.
std::string read_binary_file(const std::string& dir, const std::string& name);

// A checkpoint at step 0 of the model that m.description builds, with m.tensors as its parameters and buffers
// in the model's order; kFormat naming a missing, extra or mis-shaped tensor.
CheckpointState imported_checkpoint(ImportedModel m);

}  // namespace mirror::train
