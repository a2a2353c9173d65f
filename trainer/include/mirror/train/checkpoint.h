// mirror/train/checkpoint.h — the training state that a checkpoint holds, and atomic HDF5 checkpoint files.
//
// A checkpoint is written by rank 0 alone: to a temporary name in the same directory (".ckpt-...tmp", not
// ending in .h5), flushed and fsync'd, then renamed to ckpt-<step, 8 digits>.h5 and the directory fsync'd,
// so a crash at any moment leaves either the previous checkpoints or the new complete one — never a half
// file under a real name. Every tensor carries a CRC-32 of its bytes and the scalar header one of its own;
// reading verifies all of them. Layout: docs/checkpoint-format.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mirror::train {

struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

// One file of a tokenizer (mirror/data/tokenizer.h): its name ("model", "vocab.json", ...) and its bytes.
struct NamedBlob {
  std::string name;
  std::string bytes;
};

// The format version write_checkpoint writes; read_checkpoint reads this one, version 4 (without the tokenizer's
// files), version 3 (also without the tokenizer), version 2 (also without the loss scale) and version 1 (also
// without the sample shape, the model description and /buffers).
constexpr std::int64_t kCheckpointFormatVersion = 5;

struct CheckpointState {
  std::int64_t format_version = kCheckpointFormatVersion;  // as read (written files: always the current one)
  // Position: optimizer steps done, the epoch in progress and the next micro-batch index within it.
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::int64_t epoch_micro_step = 0;
  // Run identity.
  int world_size = 1;
  std::uint64_t seed = 0;
  std::string model_spec;         // the --model value, e.g. "mlp:512,256"
  std::string model_description;  // what rebuilds the model (today the canonical spec; v1: = model_spec)
  std::vector<std::int64_t> sample_shape;  // one input sample, e.g. {1, 28, 28} (v1: {input_features})
  std::int64_t input_features = 0;
  std::int64_t num_classes = 0;
  std::string config_json;        // the full training configuration
  std::string metrics_jsonl;      // one JSON object per finished epoch, so far
  // Training sums of the epoch in progress, so a resumed epoch reports what an uninterrupted one would.
  double epoch_loss_sum = 0.0;
  std::int64_t epoch_correct = 0;
  std::int64_t epoch_samples = 0;
  // --grad-dtype fp16's dynamic loss scale and its good steps in a row (v3; 0 and 0 without one, and in v1/v2).
  double loss_scale = 0.0;
  std::int64_t loss_scale_good_steps = 0;
  // A language model's tokenizer, from its dataset ("bytes", "sentencepiece", "gpt2"; v4): "" for any other model (and before v4). A
  // language model's sample_shape is {context}: the window length it was trained on.
  std::string tokenizer;
  // The tokenizer's files, from its dataset (v5; /tokenizer): empty for "bytes", and before v5.
  std::vector<NamedBlob> tokenizer_files;
  // Model and optimizer.
  std::vector<NamedTensor> params;
  std::vector<NamedTensor> buffers;  // the layers' non-gradient state (BatchNorm's running statistics)
  std::string optimizer_kind;     // "sgd" | "adamw"
  std::int64_t optimizer_step = 0;
  std::vector<NamedTensor> optimizer_state;
};

// "ckpt-00001200.h5" for step 1200.
std::string checkpoint_file_name(std::int64_t step);

// Writes `state` to dir/checkpoint_file_name(state.step) atomically (see above); returns the final path.
// Creates dir if needed. Throws mirror::Error(kIo/kHdf5) and removes the temporary on failure.
std::string write_checkpoint(const std::string& dir, const CheckpointState& state);

// Writes to exactly `path` atomically (temporary beside it, then rename).
void write_checkpoint_file(const std::string& path, const CheckpointState& state);

// What read_checkpoint reads: everything, or the model alone (the optimizer state neither read nor verified, and
// left empty), for the readers that never use it: the tools and --init-from. AdamW's state is twice the
// parameters, so gpt2-small's export needs half the memory without it.
enum class CheckpointParts { kAll, kModel };

// Reads and verifies every checksum of what it reads; throws mirror::Error(kFormat) naming the file and what is
// wrong (not a checkpoint, truncated, a tensor whose checksum does not match, ...), kIo if it cannot be opened.
CheckpointState read_checkpoint(const std::string& path, CheckpointParts parts = CheckpointParts::kAll);

struct CheckpointEntry {
  std::string path;
  std::int64_t step = 0;          // from the file name
  bool valid = false;             // read_checkpoint succeeded
  std::string problem;            // why not, when invalid
  std::int64_t epoch = 0;
  std::string last_metrics;       // last line of metrics_jsonl, when valid
  std::uintmax_t bytes = 0;
};

// Files named ckpt-<digits>.h5 in dir, ascending by step; verify=true reads each one to fill valid/problem.
std::vector<CheckpointEntry> list_checkpoints(const std::string& dir, bool verify);

// The newest checkpoint in dir that verifies; skipped (corrupt) newer ones are reported in `skipped`.
std::optional<std::string> latest_valid_checkpoint(const std::string& dir, std::vector<std::string>* skipped);

// Removes temporaries (".ckpt-*.h5.tmp.<pid>") that a writer killed mid-write left behind; returns how many.
int remove_stale_temporaries(const std::string& dir);

// Removes the oldest ckpt-*.h5 files so that at most `keep` remain (keep <= 0: keep all).
void prune_checkpoints(const std::string& dir, int keep);

}  // namespace mirror::train
