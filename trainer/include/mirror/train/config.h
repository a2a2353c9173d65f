// mirror/train/config.h — the trainer's configuration: one options struct built once from the command line.
// The parser and the --help text come from the same table (config.cc); validate() checks what depends on
// several flags or on the world size, naming the flag at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mirror::train {

struct TrainConfig {
  // Data.
  std::string data;                 // HDF5 dataset (or first shard)
  std::string sharding = "index";   // index | files
  bool in_memory = true;            // load this rank's working set into memory when it fits
  int prefetch = 2;                 // batches prepared ahead by the loader thread (0 = none)
  // Model and device.
  std::string model = "mlp:512,256";
  std::string device = "auto";      // auto | cpu | cuda
  int blas_threads = 1;             // OpenBLAS threads per rank (CPU)
  std::uint64_t seed = 0;
  // Schedule of work.
  std::int64_t epochs = 10;
  std::int64_t max_steps = 0;       // stop after this many optimizer steps in all (0: no limit)
  std::int64_t batch_size = 0;      // per rank; 0 = derived from global_batch_size, or 64
  std::int64_t global_batch_size = 0;
  int accum_steps = 1;
  // Optimizer.
  std::string optimizer = "sgd";    // sgd | adamw
  double lr = 0.05;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // Learning-rate schedule.
  std::int64_t warmup_steps = 0;
  std::string decay = "none";       // none | cosine | step
  std::int64_t decay_step_size = 0; // step decay: multiply by gamma every this many steps
  double gamma = 0.1;
  double min_lr = 0.0;              // cosine floor
  std::string scale_lr = "none";    // none | linear (lr * global batch / reference batch)
  std::int64_t reference_batch = 64;
  // Communication.
  double bucket_mb = 25.0;
  bool overlap = true;              // start each bucket during backward (false: all after backward)
  std::string backend = "auto";     // auto | host | nccl
  std::string host_transport = "auto";  // host backend: auto | shm | hierarchical | mpi
  bool check_collectives = true;        // --check-collectives on|off (CommOptions::check_consistency)
  // Each rank updates only its shard of the parameters (reduce-scatter, optimizer, all-gather) instead of
  // all of them after an all-reduce: auto (on for CPU models on the shared-memory transport) | on | off.
  std::string shard_optimizer = "auto";
  double timeout_s = 300.0;
  // Checkpoints, evaluation, output.
  std::string checkpoint_dir;
  std::string checkpoint_every = "epoch";  // a number of steps, or "epoch"
  int keep = 3;
  std::string resume;               // "" | auto | PATH
  int eval_every = 1;               // epochs; 0 = never
  std::string metrics;              // JSONL file written by rank 0
  std::string progress = "auto";    // auto | on | off

  // Derived by validate().
  std::int64_t checkpoint_every_steps = 0;  // 0: at the end of every epoch
};

// Parses argv into `config`. Returns std::nullopt to go on, or the exit code to return now (0 after --help,
// 2 for a bad flag, with the message printed when `print` is true).
std::optional<int> parse_train_config(int argc, char** argv, TrainConfig& config, bool print);

// Checks the combinations and fills the derived fields; world_size is the number of ranks.
// Throws mirror::Error(kInvalidArgument) naming the flag.
void validate(TrainConfig& config, int world_size);

// The configuration as one JSON object (stored in checkpoints and printed by mirror-ckpt inspect).
std::string to_json(const TrainConfig& config);

}  // namespace mirror::train
