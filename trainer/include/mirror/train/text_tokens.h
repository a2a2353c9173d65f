// mirror/train/text_tokens.h — a language model's tokenizer between its dataset, its checkpoints and the programs
// that take or give text (mirror-generate). The tokenizers themselves are the data library's (mirror/data/
// tokenizer.h: "bytes", "sentencepiece", "gpt2"); a checkpoint carries the name (CheckpointState::tokenizer) and the
// files (CheckpointState::tokenizer_files) of its dataset's, so text is encoded and decoded from the checkpoint alone.
#pragma once

#include <memory>
#include <vector>

#include "mirror/data/dataset.h"
#include "mirror/data/tokenizer.h"
#include "mirror/train/checkpoint.h"

namespace mirror::train {

// The tokenizer a checkpoint records, rebuilt from its name and files. kInvalidArgument for a name this build does
// not know; kFormat (naming the checkpoint's tokenizer) when its files are missing or malformed.
std::unique_ptr<data::Tokenizer> checkpoint_tokenizer(const CheckpointState& state);

// A token dataset's tokenizer files (its /tokenizer group), as a checkpoint stores them; none for a dataset of
// samples, or a tokenizer without files ("bytes").
std::vector<NamedBlob> dataset_tokenizer_files(const data::Dataset& dataset);

}  // namespace mirror::train
