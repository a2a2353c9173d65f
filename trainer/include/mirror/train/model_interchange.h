// mirror/train/model_interchange.h — a checkpoint's model out to, and back in from, the files other tools read
// (mirror-ckpt export/import; docs/checkpoint-format.md, "Export and import"):
//   safetensors  DIR/model.safetensors (every parameter and buffer, float32, under Mirror's PyTorch-style names)
//                and DIR/model.json (the model description, sample shape, classes and tokenizer; the tokenizer's
//                files in DIR/tokenizer/): any model;
//   hf-gpt2      DIR/model.safetensors in the layout of Hugging Face's GPT2LMHeadModel and DIR/config.json:
//                GPT-2-shaped models only (gpt2_shape.h).
// Export checks everything before it writes; on error it leaves nothing behind (DIR removed when it made it).
// Import gives a checkpoint at step 0 without optimizer state (optimizer_kind "none"), its tensors in the order
// of the model its description builds, a missing, extra or mis-shaped tensor refused by name.
#pragma once

#include <string>

#include "mirror/train/checkpoint.h"

namespace mirror::train {

enum class ModelFormat { kSafetensors, kHfGpt2 };

// "safetensors" or "hf-gpt2"; kInvalidArgument naming the value otherwise.
ModelFormat parse_model_format(const std::string& name);

// Writes the model of `state` to `out_dir` (created when missing) in `format`. Errors: kInvalidArgument (a model
// the format cannot hold, e.g. not GPT-2-shaped for hf-gpt2), kIo.
void export_model(const CheckpointState& state, ModelFormat format, const std::string& out_dir);

// The checkpoint that `dir` (written by export_model, or by Hugging Face for hf-gpt2) holds. Errors: kFormat
// naming the file and the tensor or setting, kIo.
CheckpointState import_model(const std::string& dir, ModelFormat format);

}  // namespace mirror::train
