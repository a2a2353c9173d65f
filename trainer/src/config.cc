// config.cc — the trainer's flag table (CLI11: parser and --help in one), validation and JSON form.
#include "mirror/train/config.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "mirror/error.h"

namespace mirror::train {
namespace {

void add_options(CLI::App& app, TrainConfig& c) {
  app.description(
      "Data-parallel training: every rank trains a replica of the model on its own slice of each global batch;\n"
      "gradients are averaged across ranks; rank 0 writes checkpoints and prints. Run it as\n"
      "  mpirun -np N trainer --data F.h5 ...   or   mirrorrun -- trainer --data F.h5 ...");
  app.option_defaults()->always_capture_default();
  // A flag given twice takes its last value, so wrappers can put defaults first and the user's flags after.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(34);

  auto* data = app.add_option("--data", c.data, "HDF5 dataset (made by mirror-data), or its first shard file")
                   ->required()->group("Data");
  (void)data;
  app.add_option("--sharding", c.sharding,
                 "index: every rank draws its slice of each global batch from the whole set (N ranks x batch B "
                 "trains exactly like 1 rank x N*B); files: rank r reads only its own shard files, shuffled within "
                 "a buffer (for sets larger than memory; gives up that exact equivalence)")
      ->check(CLI::IsMember({"index", "files"}))->group("Data");
  app.add_flag("!--no-in-memory", c.in_memory, "read batches from the file instead of loading the rank's part into memory")
      ->group("Data");
  app.add_option("--prefetch", c.prefetch, "batches prepared ahead by the loader thread (0: none)")
      ->check(CLI::Range(0, 64))->group("Data");

  app.add_option("--model", c.model, "model: mlp:H1,H2,... (hidden sizes, ReLU between)")->group("Model");
  app.add_option("--device", c.device, "auto (CUDA when a GPU is visible, else CPU), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))->group("Model");
  app.add_option("--blas-threads", c.blas_threads, "OpenBLAS threads per rank on the CPU")
      ->check(CLI::Range(1, 256))->group("Model");
  app.add_option("--seed", c.seed, "seed of parameter initialisation and data order")->group("Model");

  app.add_option("--epochs", c.epochs, "epochs to train")->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->group("Training");
  app.add_option("--max-steps", c.max_steps, "stop after this many optimizer steps in all (0: no limit)")
      ->check(CLI::NonNegativeNumber)->group("Training");
  auto* bs = app.add_option("--batch-size", c.batch_size, "samples per rank per step (default 64)")
                 ->check(CLI::PositiveNumber)->group("Training");
  auto* gbs = app.add_option("--global-batch-size", c.global_batch_size,
                             "samples per step over all ranks (must divide by the number of ranks)")
                  ->check(CLI::PositiveNumber)->group("Training");
  bs->excludes(gbs);
  app.add_option("--accum-steps", c.accum_steps,
                 "micro-batches whose gradients are accumulated locally before one averaged step")
      ->check(CLI::Range(1, 4096))->group("Training");

  app.add_option("--optimizer", c.optimizer, "sgd (momentum, Nesterov, weight decay) or adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}))->group("Optimizer");
  app.add_option("--lr", c.lr, "learning rate")->check(CLI::PositiveNumber)->group("Optimizer");
  app.add_option("--momentum", c.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->group("Optimizer");
  app.add_flag("--nesterov", c.nesterov, "Nesterov momentum")->group("Optimizer");
  app.add_option("--weight-decay", c.weight_decay, "weight decay (decoupled for adamw)")
      ->check(CLI::NonNegativeNumber)->group("Optimizer");
  app.add_option("--beta1", c.beta1, "AdamW beta1")->check(CLI::Range(0.0, 1.0))->group("Optimizer");
  app.add_option("--beta2", c.beta2, "AdamW beta2")->check(CLI::Range(0.0, 1.0))->group("Optimizer");
  app.add_option("--eps", c.eps, "AdamW epsilon")->check(CLI::PositiveNumber)->group("Optimizer");

  app.add_option("--warmup-steps", c.warmup_steps, "linear warmup from 0 over this many steps")
      ->check(CLI::NonNegativeNumber)->group("Schedule");
  app.add_option("--decay", c.decay, "after warmup: none, cosine (to --min-lr at the last step) or step")
      ->check(CLI::IsMember({"none", "cosine", "step"}))->group("Schedule");
  app.add_option("--decay-step-size", c.decay_step_size, "step decay: multiply by --gamma every this many steps")
      ->check(CLI::NonNegativeNumber)->group("Schedule");
  app.add_option("--gamma", c.gamma, "step decay factor")->check(CLI::Range(0.0, 1.0))->group("Schedule");
  app.add_option("--min-lr", c.min_lr, "cosine decay floor")->check(CLI::NonNegativeNumber)->group("Schedule");
  app.add_option("--scale-lr", c.scale_lr,
                 "linear: lr x global batch / --reference-batch (the linear scaling rule, Goyal et al. 2017)")
      ->check(CLI::IsMember({"none", "linear"}))->group("Schedule");
  app.add_option("--reference-batch", c.reference_batch, "batch size that --lr was tuned for")
      ->check(CLI::PositiveNumber)->group("Schedule");

  app.add_option("--bucket-mb", c.bucket_mb, "gradient bucket size in MB; each bucket is averaged as soon as "
                                             "backward has produced it, overlapping the rest of backward")
      ->check(CLI::Range(0.001, 4096.0))->group("Communication");
  app.add_flag("!--no-overlap", c.overlap, "start all gradient all-reduces after backward instead of during it "
                                          "(for measuring what overlap gains)")
      ->group("Communication");
  app.add_option("--backend", c.backend, "auto (nccl on CUDA, host on CPU), host or nccl")
      ->check(CLI::IsMember({"auto", "host", "nccl"}))->group("Communication");
  app.add_option("--host-transport", c.host_transport,
                 "host backend: auto (shm when every rank is on one host, hierarchical across hosts with as many "
                 "ranks each, else mpi), shm, hierarchical or mpi")
      ->check(CLI::IsMember({"auto", "shm", "hierarchical", "mpi"}))->group("Communication");
  app.add_option("--check-collectives", c.check_collectives,
                 "on: every collective first checks that all ranks issued the same call; off: skip it")
      ->type_name("on|off")->group("Communication");
  app.add_option("--shard-optimizer", c.shard_optimizer,
                 "on: each rank reduce-scatters the gradients, updates only its shard of the parameters and "
                 "all-gathers them (the optimizer's work split over the ranks; same results); off: all-reduce "
                 "and every rank updates everything; auto: on for CPU models on the shared-memory transport")
      ->check(CLI::IsMember({"auto", "on", "off"}))->group("Communication");
  app.add_option("--timeout", c.timeout_s, "seconds a collective may wait before the job fails")
      ->check(CLI::Range(0.1, 86400.0))->group("Communication");

  app.add_option("--checkpoint-dir", c.checkpoint_dir, "directory for checkpoints (rank 0 writes)")
      ->group("Checkpoints");
  app.add_option("--checkpoint-every", c.checkpoint_every, "a number of steps, or 'epoch'")->group("Checkpoints");
  app.add_option("--keep", c.keep, "checkpoints kept (0: all)")->check(CLI::NonNegativeNumber)->group("Checkpoints");
  app.add_option("--resume", c.resume, "auto (newest valid checkpoint in --checkpoint-dir, if any) or a file")
      ->group("Checkpoints");

  app.add_option("--eval-every", c.eval_every, "evaluate on the test split every this many epochs (0: never)")
      ->check(CLI::NonNegativeNumber)->group("Output");
  app.add_option("--metrics", c.metrics, "write one JSON object per epoch to this file (rank 0)")->group("Output");
  app.add_option("--progress", c.progress, "progress bar: auto (on a terminal), on or off")
      ->check(CLI::IsMember({"auto", "on", "off"}))->group("Output");
}

}  // namespace

std::optional<int> parse_train_config(int argc, char** argv, TrainConfig& config, bool print) {
  CLI::App app{"", "trainer"};
  add_options(app, config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!print) return e.get_exit_code() == 0 ? 0 : 2;
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

void validate(TrainConfig& c, int world_size) {
  MIRROR_CHECK(world_size >= 1, kInternal, "world size " << world_size);
  if (c.global_batch_size > 0) {
    MIRROR_CHECK(c.global_batch_size % world_size == 0, kInvalidArgument,
                 "--global-batch-size " << c.global_batch_size << " does not divide by the " << world_size
                                        << " ranks; use a multiple of " << world_size << " (e.g. "
                                        << ((c.global_batch_size / world_size) + 1) * world_size
                                        << ") or give --batch-size per rank");
    c.batch_size = c.global_batch_size / world_size;
  } else if (c.batch_size <= 0) {
    c.batch_size = 64;
  }
  c.global_batch_size = c.batch_size * world_size;
  if (c.checkpoint_every == "epoch") {
    c.checkpoint_every_steps = 0;
  } else {
    std::size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(c.checkpoint_every, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MIRROR_CHECK(used == c.checkpoint_every.size() && n > 0, kInvalidArgument,
                 "--checkpoint-every '" << c.checkpoint_every << "' is neither a positive number of steps nor 'epoch'");
    c.checkpoint_every_steps = n;
  }
  MIRROR_CHECK(!(c.resume == "auto" && c.checkpoint_dir.empty()), kInvalidArgument,
               "--resume auto needs --checkpoint-dir to look in");
  MIRROR_CHECK(!(c.decay == "step" && c.decay_step_size <= 0), kInvalidArgument,
               "--decay step needs --decay-step-size > 0");
  MIRROR_CHECK(c.min_lr <= c.lr, kInvalidArgument, "--min-lr " << c.min_lr << " is above --lr " << c.lr);
  if (c.optimizer == "adamw")
    MIRROR_CHECK(c.beta1 < 1.0 && c.beta2 < 1.0, kInvalidArgument, "--beta1 and --beta2 must be below 1");
}

std::string to_json(const TrainConfig& c) {
  nlohmann::ordered_json j;
  j["data"] = c.data;
  j["sharding"] = c.sharding;
  j["in_memory"] = c.in_memory;
  j["prefetch"] = c.prefetch;
  j["model"] = c.model;
  j["device"] = c.device;
  j["blas_threads"] = c.blas_threads;
  j["seed"] = c.seed;
  j["epochs"] = c.epochs;
  j["max_steps"] = c.max_steps;
  j["batch_size"] = c.batch_size;
  j["global_batch_size"] = c.global_batch_size;
  j["accum_steps"] = c.accum_steps;
  j["optimizer"] = c.optimizer;
  j["lr"] = c.lr;
  j["momentum"] = c.momentum;
  j["nesterov"] = c.nesterov;
  j["weight_decay"] = c.weight_decay;
  j["beta1"] = c.beta1;
  j["beta2"] = c.beta2;
  j["eps"] = c.eps;
  j["warmup_steps"] = c.warmup_steps;
  j["decay"] = c.decay;
  j["decay_step_size"] = c.decay_step_size;
  j["gamma"] = c.gamma;
  j["min_lr"] = c.min_lr;
  j["scale_lr"] = c.scale_lr;
  j["reference_batch"] = c.reference_batch;
  j["bucket_mb"] = c.bucket_mb;
  j["overlap"] = c.overlap;
  j["backend"] = c.backend;
  j["host_transport"] = c.host_transport;
  j["check_collectives"] = c.check_collectives;
  j["shard_optimizer"] = c.shard_optimizer;
  j["timeout_s"] = c.timeout_s;
  j["checkpoint_dir"] = c.checkpoint_dir;
  j["checkpoint_every"] = c.checkpoint_every;
  j["keep"] = c.keep;
  j["resume"] = c.resume;
  j["eval_every"] = c.eval_every;
  j["metrics"] = c.metrics;
  return j.dump();
}

}  // namespace mirror::train
