// config.cc — the trainer's flag table (CLI11: parser and --help in one). Validation and the JSON form:
// config_json.cc; the enum flags' name tables: config_tables.h.
#include "mirror/train/config.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

#include "mirror/error.h"
#include "mirror/nn/model_description.h"
#include "mirror/train/cli_checks.h"
#include "config_tables.h"

namespace mirror::train {
namespace {

using cli::add_choice;
using cli::enum_choice;
using namespace detail;  // config_tables.h

// --host-transport: "auto" or a host row of the collectives' backend table, parsed by it into its row.
void add_host_transport(CLI::App& app, const coll::BackendInfo*& value) {
  std::vector<std::string> names{"auto"};
  for (const coll::BackendInfo* b : coll::backends())
    if (b->buffers == coll::Buffers::kHost) names.emplace_back(b->name);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  app.add_option_function<std::string>(
         "--host-transport", [&value](const std::string& name) { value = coll::parse_backend("host", name); },
         "host backend: auto (shm when every rank is on one host, hierarchical across hosts with as many ranks "
         "each, else mpi) or one by name")
      ->check(CLI::Validator(
          [names, all](std::string& s) -> std::string {
            for (const auto& n : names)
              if (n == s) return "";
            return "must be one of " + all + cli::detail::got(s);
          },
          "{" + all + "}", "host_transport"))
      ->default_str("auto")->group("Communication");
}

// --checkpoint-every: "epoch" (stored as 0) or a positive number of steps.
CLI::Validator epoch_or_steps() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s == "epoch") {
          s = "0";
          return "";
        }
        const auto v = cli::detail::parse_integer(s);
        return v && *v >= 1 ? "" : "must be a positive number of steps or 'epoch', got '" + s + "'";
      },
      "STEPS|epoch", "epoch_or_steps");
}

// --timeline-steps: "A:B" (telemetry::parse_timeline_steps says what is wrong with anything else).
CLI::Validator timeline_window() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          telemetry::parse_timeline_steps(s);
          return "";
        } catch (const Error& e) {
          return e.message();
        }
      },
      "A:B", "timeline_window");
}

// --loss-scale: a power of two in [1, 2^24] (scaling by it and back is exact in float32).
CLI::Validator power_of_two_scale() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto v = cli::detail::parse_number(s);
        int exponent = 0;
        const bool power = v && *v >= 1 && *v <= 16777216.0 && std::frexp(*v, &exponent) == 0.5;
        return power ? "" : "must be a power of two from 1 to 16777216 (2^24)" + cli::detail::got(s);
      },
      "2^k, 0<=k<=24", "power_of_two_scale");
}

// --lr-milestones: epochs "3,7", each a positive integer, strictly ascending.
std::vector<std::int64_t> parse_milestones(const std::string& text) {
  std::vector<std::int64_t> epochs;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const auto v = cli::detail::parse_integer(text.substr(begin, end - begin));
    if (!v || *v < 1 || (!epochs.empty() && *v <= epochs.back())) return {};
    epochs.push_back(*v);
    begin = end + 1;
  }
  return epochs;
}

CLI::Validator milestone_list() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return parse_milestones(s).empty() ? "must be epochs in ascending order, like 3,7, got '" + s + "'" : "";
      },
      "E1,E2,...", "milestone_list");
}

// --resume: "auto" or a checkpoint file.
void set_resume(ResumeFrom& r, const std::string& value) {
  r.kind = value == "auto" ? ResumeFrom::Kind::kLatest : ResumeFrom::Kind::kFile;
  r.path = value == "auto" ? "" : value;
}

std::string model_help() {
  std::string help = "a built-in model or a JSON model file (docs/model-format.md); built-ins:";
  for (const nn::BuiltinModel& m : nn::builtin_models()) help += std::string("\n  ") + m.name + ": " + m.summary;
  return help;
}

void add_options(CLI::App& app, TrainConfig& c, bool print) {
  app.description(
      "Data-parallel training: every rank trains a replica of the model on its own slice of each global batch;\n"
      "gradients are averaged across ranks; rank 0 writes checkpoints and prints. Run it as\n"
      "  mpirun -np N trainer --data F.h5 ...   or   mirrorrun -- trainer --data F.h5 ...");
  app.option_defaults()->always_capture_default();
  // A flag given twice takes its last value, so wrappers can put defaults first and the user's flags after.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(34);
  cli::install_sentence_errors(app);

  app.add_option("--data", c.data, "HDF5 dataset (made by mirror-data), or its first shard file")
      ->required()->group("Data");
  add_choice(app, "--sharding", c.sharding, kShardings,
             "index: every rank draws its slice of each global batch from the whole set (N ranks x batch B "
             "trains exactly like 1 rank x N*B); files: rank r reads only its own shard files, shuffled within "
             "a buffer (for sets larger than memory; gives up that exact equivalence)")->group("Data");
  app.add_flag("!--no-in-memory", c.in_memory, "read batches from the file instead of loading the rank's part into memory")
      ->group("Data");
  app.add_option("--prefetch", c.prefetch, "batches prepared ahead by the loader thread (0: none)")
      ->check(cli::integer_in(0, 64))->group("Data");
  app.add_option("--random-crop", c.random_crop,
                 "augmentation of training images: pad P pixels on every side, then crop back at a random offset "
                 "(0: none); the draws depend only on seed, epoch and sample, so equivalence and resume stay exact")
      ->check(cli::integer_in(0, 1024))->group("Data");
  app.add_flag("--hflip", c.hflip, "augmentation of training images: flip half of them left-right")->group("Data");

  app.add_option("--model", c.model, model_help())->default_str("mlp:512,256, or --init-from's model")->group("Model");
  app.add_option("--init-from", c.init_from,
                 "start from this checkpoint's weights and buffers (a file, or a directory: its newest valid "
                 "checkpoint) with a fresh optimizer, schedule and step count (fine-tuning); without --model, its "
                 "model; --resume auto finding a checkpoint of this run wins")
      ->group("Model");
  // Prints a built-in as a JSON model file to start from, and exits (before --data is asked for).
  app.add_option_function<std::string>(
         "--print-model",
         [print](const std::string& name) {
           std::string json;
           try {
             json = nn::builtin_model(name).to_json(2);
           } catch (const Error& e) {
             throw CLI::ValidationError("--print-model", e.message());
           }
           if (print) std::cout << json << std::endl;
           throw CLI::Success();
         },
         "print built-in model NAME as a JSON model file and exit")
      ->group("Model");
  add_choice(app, "--device", c.device, kDevices, "auto (CUDA when a GPU is visible, else CPU), cpu or cuda")
      ->group("Model");
  app.add_option("--blas-threads", c.blas_threads, "CPU compute threads per rank (oneDNN's OpenMP threads)")
      ->check(cli::integer_in(1, 256))->group("Model");
  add_choice(app, "--conv-algorithm", c.conv_algorithm, kConvAlgorithms,
             "CPU convolutions: winograd (default: oneDNN's Winograd kernels for 3x3 stride-1 layers where it has "
             "them, AVX-512 CPUs; direct elsewhere) or direct (every layer)")
      ->group("Model");
  add_choice(app, "--precision", c.precision, kPrecisions,
             "fp32 (default) or bf16: linear layers, attention's products and convolutions with bfloat16 operands "
             "and float32 accumulation; normalisation, softmax, the loss, the optimizer and the weights stay float32 "
             "(checkpoints too, so a run may switch on resume). CPU: needs oneDNN's bfloat16 kernels (AVX-512)")
      ->group("Model");
  add_choice(app, "--fusion", c.fusion, kOnOff,
             "on (default): the fusion pass joins layers whose work one pass can do (the layer table names each); "
             "off: every layer runs as written (the same results within float rounding)")
      ->group("Model");
  app.add_option("--seed", c.seed, "seed of parameter initialisation and data order")->group("Model");
  app.add_flag("--sync-bn,!--no-sync-bn", c.sync_bn,
               "BatchNorm's batch statistics over all ranks (default; N ranks x B trains like 1 x N*B); "
               "--no-sync-bn: per rank, running statistics averaged before checkpoints and evaluation")
      ->group("Model");

  app.add_option("--epochs", c.epochs, "epochs to train")->check(cli::integer_in(1, 1000000))->group("Training");
  app.add_option("--max-steps", c.max_steps, "stop after this many optimizer steps in all (0: no limit)")
      ->check(cli::non_negative_integer())->group("Training");
  app.add_option("--train-steps", c.train_steps,
                 "train exactly this many optimizer steps in all, crossing epochs as needed, instead of --epochs; "
                 "the schedule (warmup, cosine to --min-lr) spans them (0: --epochs decides)")
      ->check(cli::non_negative_integer())->group("Training");
  app.add_option("--context", c.context,
                 "language models: tokens per training window (0: the model's context, its position embedding's "
                 "rows); the checkpoint records it for mirror-eval and mirror-generate")
      ->check(cli::non_negative_integer())->group("Training");
  app.add_option("--grad-clip", c.grad_clip,
                 "clip the L2 norm of the averaged gradient over all parameters to this (0: off); the metrics "
                 "carry grad_norm")
      ->check(cli::non_negative_number())->group("Optimizer");
  auto* bs = app.add_option("--batch-size", c.batch_size, "samples per rank per step (default 64)")
                 ->check(cli::positive_integer())->group("Training");
  auto* gbs = app.add_option("--global-batch-size", c.global_batch_size,
                             "samples per step over all ranks (must divide by the number of ranks)")
                  ->check(cli::positive_integer())->group("Training");
  bs->excludes(gbs);
  app.add_option("--accum-steps", c.accum_steps,
                 "micro-batches whose gradients are accumulated locally before one averaged step")
      ->check(cli::integer_in(1, 4096))->group("Training");

  add_choice(app, "--optimizer", c.optimizer, kOptimizers, "sgd (momentum, Nesterov, weight decay) or adamw")
      ->group("Optimizer");
  app.add_option("--lr", c.lr, "learning rate")->check(cli::positive_number())->group("Optimizer");
  app.add_option("--momentum", c.momentum, "SGD momentum")->check(cli::probability())->group("Optimizer");
  app.add_flag("--nesterov", c.nesterov, "Nesterov momentum")->group("Optimizer");
  app.add_option("--weight-decay", c.weight_decay, "weight decay (decoupled for adamw)")
      ->check(cli::non_negative_number())->group("Optimizer");
  app.add_flag("--decay-bn-and-bias", c.decay_bn_and_bias,
               "weight decay on BatchNorm's and LayerNorm's weight/bias and on biases too (default: on the other parameters only)")
      ->group("Optimizer");
  app.add_option("--beta1", c.beta1, "AdamW beta1")->check(cli::probability())->group("Optimizer");
  app.add_option("--beta2", c.beta2, "AdamW beta2")->check(cli::probability())->group("Optimizer");
  app.add_option("--eps", c.eps, "AdamW epsilon")->check(cli::positive_number())->group("Optimizer");

  app.add_option("--warmup-steps", c.warmup_steps, "linear warmup from 0 over this many steps")
      ->check(cli::non_negative_integer())->group("Schedule");
  add_choice(app, "--decay", c.decay, kDecays, "after warmup: none, cosine (to --min-lr at the last step) or step")
      ->group("Schedule");
  app.add_option("--decay-step-size", c.decay_step_size, "step decay: multiply by --gamma every this many steps")
      ->check(cli::non_negative_integer())->group("Schedule");
  app.add_option("--gamma", c.gamma, "step decay and --lr-milestones factor")->check(cli::number_in(0.0, 1.0))->group("Schedule");
  app.add_option_function<std::string>(
         "--lr-milestones", [&c](const std::string& v) { c.lr_milestones = parse_milestones(v); },
         "piecewise-constant schedule in epochs: 3,7 trains 3 epochs at --lr, 4 at lr x --gamma and the rest at "
         "lr x gamma^2 (the Keras tutorial's 1e-3 -> 1e-4 -> 1e-5)")
      ->check(milestone_list())->group("Schedule");
  app.add_option("--min-lr", c.min_lr, "cosine decay floor")->check(cli::non_negative_number())->group("Schedule");
  add_choice(app, "--scale-lr", c.scale_lr, kScalings,
             "linear: lr x global batch / --reference-batch (the linear scaling rule, Goyal et al. 2017)")
      ->group("Schedule");
  app.add_option("--reference-batch", c.reference_batch, "batch size that --lr was tuned for")
      ->check(cli::positive_integer())->group("Schedule");

  app.add_option("--bucket-mb", c.bucket_mb, "gradient bucket size in MB; each bucket is averaged as soon as "
                                             "backward has produced it, overlapping the rest of backward")
      ->check(cli::number_in(0.001, 4096.0))->group("Communication");
  app.add_flag("!--no-overlap", c.overlap, "start all gradient all-reduces after backward instead of during it "
                                          "(for measuring what overlap gains)")
      ->group("Communication");
  add_choice(app, "--backend", c.backend, kBackends, "auto (nccl on CUDA, host on CPU), host or nccl")
      ->group("Communication");
  add_host_transport(app, c.host_transport);
  app.add_option("--check-collectives", c.check_collectives,
                 "on: every collective first checks that all ranks issued the same call; off: skip it")
      ->transform(enum_choice<int>({{"on", 1}, {"off", 0}}))->default_str("on")->group("Communication");
  add_choice(app, "--shard-optimizer", c.shard_optimizer, kToggles,
             "on: each rank reduce-scatters the gradients, updates only its shard of the parameters and "
             "all-gathers them (the optimizer's work split over the ranks; same results); off: all-reduce "
             "and every rank updates everything; auto: on for CPU models on the shared-memory transport")
      ->group("Communication");
  add_choice(app, "--grad-dtype", c.grad_dtype, kGradDtypes,
             "the type gradients are sent in: fp32, bf16 (bfloat16, as DDP's bf16 compression hook) or fp16 "
             "(float16 with a dynamic loss scale, as Horovod's fp16 compression); the host backends sum 16-bit "
             "gradients in float32 and round once, 1 rank rounds its gradients the same way")
      ->group("Communication");
  app.add_option("--loss-scale", c.loss_scale,
                 "--grad-dtype fp16: the initial loss scale, a power of two from 1 to 16777216 (default 65536); "
                 "it halves at an overflow (that step is skipped) and doubles after "
                 "--loss-scale-growth-interval good steps")
      ->check(power_of_two_scale())->default_str("65536")->group("Communication");
  app.add_option("--loss-scale-growth-interval", c.loss_scale_growth_interval,
                 "--grad-dtype fp16: good steps after which the loss scale doubles")
      ->check(cli::integer_in(1, 1000000000))->group("Communication");
  app.add_option("--timeout", c.timeout_s, "seconds a collective may wait before the job fails")
      ->check(cli::number_in(0.1, 86400.0))->group("Communication");

  app.add_option("--checkpoint-dir", c.checkpoint_dir, "directory for checkpoints (rank 0 writes)")
      ->group("Checkpoints");
  app.add_option("--checkpoint-every", c.checkpoint_every_steps, "a number of steps, or 'epoch'")
      ->transform(epoch_or_steps())->default_str("epoch")->group("Checkpoints");
  app.add_option("--keep", c.keep, "checkpoints kept (0: all)")->check(cli::non_negative_integer())
      ->group("Checkpoints");
  add_choice(app, "--keep-best", c.keep_best, kBestMetrics,
             "keep the best checkpoint so far by this metric as best.h5 in --checkpoint-dir (test_acc, train_acc: "
             "highest; test_loss, train_loss: lowest), besides the --keep newest")->group("Checkpoints");
  app.add_option("--early-stop", c.early_stop,
                 "stop (with a final checkpoint) after this many evaluations without improvement of --keep-best's "
                 "metric, or of test_loss without it (0: never)")
      ->check(cli::non_negative_integer())->group("Checkpoints");
  app.add_option("--min-delta", c.min_delta, "an improvement must exceed this")
      ->check(cli::non_negative_number())->group("Checkpoints");
  app.add_option_function<std::string>("--resume", [&c](const std::string& v) { set_resume(c.resume, v); },
                                       "auto (newest valid checkpoint in --checkpoint-dir, if any) or a file")
      ->group("Checkpoints");

  app.add_option("--eval-every", c.eval_every, "evaluate on the test split every this many epochs (0: never)")
      ->check(cli::non_negative_integer())->group("Output");
  app.add_option("--eval-every-steps", c.eval_every_steps,
                 "language models: also evaluate every this many steps, on at most --eval-batches batches "
                 "(0: only at epoch ends; the end of training evaluates the whole test split)")
      ->check(cli::non_negative_integer())->group("Output");
  app.add_option("--eval-batches", c.eval_batches,
                 "--eval-every-steps: at most this many batches of the test split per evaluation (0: all)")
      ->check(cli::non_negative_integer())->group("Output");
  app.add_option("--metrics", c.metrics, "write one JSON object per epoch (and per evaluation) to this file (rank 0)")->group("Output");
  add_choice(app, "--progress", c.progress, kToggles, "progress bar: auto (on a terminal), on or off")
      ->group("Output");
  app.add_option("--tensorboard", c.tensorboard,
                 "write TensorBoard event files to this directory (rank 0; a resumed run adds a file)")
      ->group("Output");
  app.add_option("--tensorboard-every", c.tensorboard_every, "steps between the train/loss and train/lr scalars")
      ->check(cli::positive_integer())->group("Output");
  app.add_option("--timeline", c.timeline,
                 "write one Chrome trace-event JSON of every rank's steps (open it in ui.perfetto.dev)")
      ->group("Output");
  app.add_option_function<std::string>(
         "--timeline-steps", [&c](const std::string& v) { c.timeline_steps = telemetry::parse_timeline_steps(v); },
         "A:B, the steps the timeline records (counted from 1)")
      ->check(timeline_window())->default_str("5:24")->group("Output");
}

}  // namespace

std::optional<int> parse_train_config(int argc, char** argv, TrainConfig& config, bool print) {
  CLI::App app{"", "trainer"};
  add_options(app, config, print);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!print) return e.get_exit_code() == 0 ? 0 : 2;
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace mirror::train
