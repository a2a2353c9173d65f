// mirror/train/config.h — the trainer's configuration: one options struct built once from the command line.
// The parser and the --help text come from the same table (config.cc); validate() checks what depends on
// several flags or on the world size, naming the flag at fault. Every choice among names is parsed once, at
// the command line, into a typed value: nothing later compares strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/data/train_loader.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/device.h"
#include "mirror/nn/optimizer.h"
#include "mirror/nn/precision.h"
#include "mirror/nn/schedule.h"
#include "mirror/telemetry/timeline.h"

namespace mirror::train {

// A setting that is on, off, or decided by the trainer (--shard-optimizer, --progress).
enum class Toggle { kAuto, kOn, kOff };
// Which communicator carries the gradients (--backend): auto is nccl on CUDA, host on the CPU.
enum class BackendChoice { kAuto, kHost, kNccl };
// --keep-best's metric (test_acc and train_acc: higher is better; the losses: lower is better).
enum class BestMetric { kNone, kTestAcc, kTestLoss, kTrainLoss, kTrainAcc };
// --scale-lr: none, or the linear scaling rule.
enum class LrScaling { kNone, kLinear };
// --grad-dtype: the type the gradients travel in (grad_compression.h): float32, or 16 bits (bfloat16; float16
// with a dynamic loss scale).
enum class GradDtype { kFp32, kBf16, kFp16 };

std::string to_string(Toggle value);         // "auto" | "on" | "off"
std::string to_string(BackendChoice value);  // "auto" | "host" | "nccl"
std::string to_string(LrScaling value);      // "none" | "linear"
std::string to_string(GradDtype value);      // "fp32" | "bf16" | "fp16"
// --decay's names: "none" (nn::DecayKind::kConstant), "cosine", "step".
std::string decay_flag_name(nn::DecayKind kind);

// --resume: nothing, the newest valid checkpoint in --checkpoint-dir ("auto"), or one file.
struct ResumeFrom {
  enum class Kind { kNone, kLatest, kFile };
  Kind kind = Kind::kNone;
  std::string path;  // kFile
  bool any() const { return kind != Kind::kNone; }
};

struct TrainConfig {
  // Data.
  std::string data;                 // HDF5 dataset (or first shard)
  data::Sharding sharding = data::Sharding::kIndex;
  bool in_memory = true;            // load this rank's working set into memory when it fits
  int prefetch = 2;                 // batches prepared ahead by the loader thread (0 = none)
  // Augmentation of training images in the loader (data::AugmentOptions): --random-crop P pads P pixels and
  // crops back at a random offset, --hflip flips half of them; keyed by (seed, epoch, sample).
  std::int64_t random_crop = 0;
  bool hflip = false;
  // Model and device.
  std::string model;                // --model; "" (not given): --init-from's model, else mlp:512,256
  // Start from this checkpoint's parameters and buffers (a file, or a directory's newest valid checkpoint) with a
  // fresh optimizer, schedule and step count, as a fine-tune does; a checkpoint of the run itself found by
  // --resume wins over it.
  std::string init_from;
  nn::DeviceRequest device = nn::DeviceRequest::kAuto;
  int blas_threads = 1;             // OpenBLAS threads per rank (CPU)
  nn::CpuConvAlgorithm conv_algorithm = nn::CpuConvAlgorithm::kWinograd;  // CPU convolutions (cpu_kernels.h)
  nn::Precision precision = nn::Precision::kFloat32;  // what the products compute in (nn/precision.h)
  Toggle fusion = Toggle::kOn;      // the model's fusion pass (on or off; ModelGraph::fusion)
  std::uint64_t seed = 0;
  // Schedule of work.
  std::int64_t epochs = 10;
  std::int64_t max_steps = 0;       // stop after this many optimizer steps in all (0: no limit)
  // Train for exactly this many optimizer steps, crossing epochs as needed, instead of --epochs (0: --epochs);
  // the learning-rate schedule spans them. validate() does not know the steps per epoch: the trainer sets
  // epochs from it.
  std::int64_t train_steps = 0;
  // Language models: training windows of this many tokens (0: the model's context, its position embedding's
  // rows); at most the model's context.
  std::int64_t context = 0;
  // The L2 norm of the averaged gradient over all parameters is clipped to this (0: off), as PyTorch's
  // clip_grad_norm_ after DDP's all-reduce.
  double grad_clip = 0.0;
  std::int64_t batch_size = 0;      // per rank; 0 = derived from global_batch_size, or 64
  std::int64_t global_batch_size = 0;
  int accum_steps = 1;
  // Optimizer.
  nn::OptimizerKind optimizer = nn::OptimizerKind::kSgd;
  double lr = 0.05;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  bool decay_bn_and_bias = false;  // false: BatchNorm γ/β and biases take no weight decay (nn/weight_decay.h)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // Learning-rate schedule.
  std::int64_t warmup_steps = 0;
  nn::DecayKind decay = nn::DecayKind::kConstant;  // --decay none | cosine | step
  std::int64_t decay_step_size = 0; // step decay: multiply by gamma every this many steps
  double gamma = 0.1;               // step decay and milestone factor
  std::vector<std::int64_t> lr_milestones;  // --lr-milestones 3,7: lr x gamma^k from the k-th epoch listed
  double min_lr = 0.0;              // cosine floor
  LrScaling scale_lr = LrScaling::kNone;  // linear: lr * global batch / reference batch
  std::int64_t reference_batch = 64;
  // Communication.
  double bucket_mb = 25.0;
  bool overlap = true;              // start each bucket during backward (false: all after backward)
  BackendChoice backend = BackendChoice::kAuto;
  const coll::BackendInfo* host_transport = nullptr;  // host backend: a host row of coll::backends(); nullptr: auto
  bool check_collectives = true;  // --check-collectives on|off (CommOptions::check_consistency)
  // Each rank updates only its shard of the parameters (reduce-scatter, optimizer, all-gather) instead of
  // all of them after an all-reduce: auto (on for CPU models on the shared-memory transport) | on | off.
  Toggle shard_optimizer = Toggle::kAuto;
  // Gradients sent in 16 bits (docs/training.md, "Compressed gradients"): each rank rounds its gradients
  // (times the loss scale for fp16) to the type, the reduction accumulates in float32 on the host backends.
  GradDtype grad_dtype = GradDtype::kFp32;
  // fp16 only: the initial loss scale (a power of two in [1, 2^24]); 0: not given (2^16 for fp16). It halves
  // at every overflow (the step is skipped) and doubles after loss_scale_growth_interval good steps.
  double loss_scale = 0.0;
  std::int64_t loss_scale_growth_interval = 2000;
  // BatchNorm's batch statistics summed over all ranks (SyncBN), so N ranks x B train like 1 x N*B. Off:
  // each rank normalises with its own batch, and the running statistics are averaged over the ranks before
  // every checkpoint and evaluation (equivalence is given up).
  bool sync_bn = true;
  double timeout_s = 300.0;
  // Checkpoints, evaluation, output.
  std::string checkpoint_dir;
  std::int64_t checkpoint_every_steps = 0;  // --checkpoint-every N steps; 0: "epoch" (at every epoch's end)
  int keep = 3;
  // The best checkpoint so far by this metric is kept as best.h5 in checkpoint_dir (besides --keep).
  BestMetric keep_best = BestMetric::kNone;
  std::int64_t early_stop = 0;      // stop after this many evaluations without improvement (0: never)
  double min_delta = 0.0;           // an improvement must exceed this
  ResumeFrom resume;                // --resume auto | PATH
  int eval_every = 1;               // epochs; 0 = never
  // Language models: also evaluate every this many steps (0: only at epoch ends and the end of training), on at
  // most eval_batches batches of the test split (0: all of it); the final evaluation covers the whole split.
  std::int64_t eval_every_steps = 0;
  std::int64_t eval_batches = 0;
  std::string metrics;              // JSONL file written by rank 0
  Toggle progress = Toggle::kAuto;   // auto: on when the output is a terminal
  std::string tensorboard;          // TensorBoard event files in this directory (rank 0); docs/telemetry.md
  std::int64_t tensorboard_every = 10;  // steps between the train/loss and train/lr scalars
  std::string timeline;             // one Chrome trace-event JSON of every rank (rank 0 writes)
  telemetry::TimelineWindow timeline_steps{5, 24};  // --timeline-steps A:B (steps counted from 1)
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
