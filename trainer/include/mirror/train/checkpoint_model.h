// mirror/train/checkpoint_model.h — what the programs that read a checkpoint share (mirror-eval,
// mirror-generate): which file a --checkpoint value names, and the model a checkpoint describes with its
// parameters and buffers in place.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "mirror/nn/device.h"
#include "mirror/nn/model.h"
#include "mirror/train/checkpoint.h"

namespace mirror::train {

// A file is itself; a directory means its newest checkpoint that verifies (each corrupt newer one is reported
// on `warnings`), or with `best` its best.h5 (trainer --keep-best). kInvalidArgument/kIo naming the path.
std::string resolve_checkpoint(const std::string& path, bool best, std::ostream& warnings);

// The model that state.model_description builds for state.sample_shape and state.num_classes on `device`, with
// the checkpoint's parameters and buffers; kFormat naming `path` when their names or shapes are not that model's.
std::unique_ptr<nn::Model> model_from_checkpoint(const std::string& path, const CheckpointState& state,
                                                 const nn::Device& device);

}  // namespace mirror::train
