// state_transfer.h — moving training state between rank 0, the other ranks and checkpoint files: the initial
// parameters (made on rank 0, broadcast), a checkpoint captured from the live model and optimizer, and a
// resume (rank 0 reads and checks the file, every rank receives the state by broadcast). Private.
#pragma once

#include <cstdint>
#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/config.h"
#include "mirror/nn/model.h"
#include "mirror/nn/optimizer.h"

namespace mirror::train {

// Where a run is: what a checkpoint adds to the model and optimizer.
struct RunPosition {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::int64_t micro = 0;       // next micro-batch index in the epoch
  double loss_sum = 0.0;        // training sums of the epoch in progress (this rank's part)
  std::int64_t correct = 0;
  std::int64_t samples = 0;
  std::string metrics_jsonl;    // rank 0
  // --grad-dtype fp16's dynamic loss scale (grad_compression.h): its scale and good steps in a row; 0: none.
  double loss_scale = 0.0;
  std::int64_t loss_scale_good_steps = 0;
};

// Rank 0 initialises the parameters from the seed; every rank receives them.
void init_and_broadcast_parameters(nn::Model& model, std::uint64_t seed, coll::Communicator& control);

// The checkpoint of the current state (called on rank 0; reads the device state to the host).
// tokenizer, tokenizer_files: the dataset's ("" and none for samples with labels).
CheckpointState capture_state(const nn::Model& model, const nn::Optimizer& optimizer, const RunPosition& position,
                              const TrainConfig& config, int world_size, const std::string& tokenizer = "",
                              const std::vector<NamedBlob>& tokenizer_files = {});

// --init-from: rank 0 reads checkpoint `path` and checks that its parameters and buffers have the model's names
// and shapes (kInvalidArgument naming the first that differs, or the counts); every rank receives them. The
// optimizer, step and schedule are left as they are (fresh). Errors on rank 0 are raised there and as kRemote
// on the others. `read` (rank 0): the checkpoint already read from `path`, or null to read it here.
void init_from_checkpoint(const std::string& path, nn::Model& model, coll::Communicator& control,
                          const CheckpointState* read = nullptr);

// Resolves config.resume ("auto" or a path) on rank 0, reads and checks it against the model and optimizer,
// and broadcasts it. Returns true and fills model, optimizer and position on every rank when a checkpoint was
// loaded; false when "auto" found none. `path_out` (rank 0) receives the file used. Errors on rank 0 are
// raised there and as kRemote on the others, so no rank waits for a broadcast that never comes.
bool resume_from_checkpoint(const TrainConfig& config, nn::Model& model, nn::Optimizer& optimizer, RunPosition& position,
                            coll::Communicator& control, std::string& path_out, std::ostream* out);

}  // namespace mirror::train
