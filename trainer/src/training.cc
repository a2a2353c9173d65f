// training.cc — the data-parallel training loop: model replicas, this rank's slice of every global batch,
// bucketed gradient averaging overlapped with backward, identical optimizer steps, rank-0 checkpoints,
// data-parallel evaluation, per-epoch lines and metrics.
#include "mirror/train/training.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "mirror/data/dataset.h"
#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "mirror/train/device.h"
#include "mirror/train/evaluate.h"
#include "mirror/train/grad_sync.h"
#include "mirror/train/loss.h"
#include "mirror/train/schedule.h"
#include "progress.h"
#include "state_transfer.h"

namespace mirror::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

OptimizerOptions optimizer_options(const TrainConfig& c) {
  OptimizerOptions o;
  o.kind = parse_optimizer_kind(c.optimizer);
  o.momentum = static_cast<float>(c.momentum);
  o.nesterov = c.nesterov;
  o.weight_decay = static_cast<float>(c.weight_decay);
  o.beta1 = static_cast<float>(c.beta1);
  o.beta2 = static_cast<float>(c.beta2);
  o.eps = static_cast<float>(c.eps);
  return o;
}

LrSchedule make_schedule(const TrainConfig& c, std::int64_t total_steps) {
  ScheduleOptions s;
  s.base_lr = static_cast<float>(c.lr);
  if (c.scale_lr == "linear") s.base_lr = scale_lr_linear(s.base_lr, c.global_batch_size, c.reference_batch);
  s.warmup_steps = c.warmup_steps;
  s.decay = c.decay == "cosine" ? DecayKind::kCosine : c.decay == "step" ? DecayKind::kStep : DecayKind::kConstant;
  s.total_steps = std::max<std::int64_t>(total_steps, c.warmup_steps + 1);
  s.min_lr = static_cast<float>(std::min(c.min_lr, static_cast<double>(s.base_lr)));
  s.step_every = c.decay_step_size;
  s.gamma = static_cast<float>(c.gamma);
  return LrSchedule(s);
}

// mkdir -p of the directory holding `path` (nothing for a bare file name).
void create_parent_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (path.empty() || parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  MIRROR_CHECK(!ec, kIo, "cannot create directory " << parent.string() << " for " << path << ": " << ec.message());
}

// Writes `text` to `path` through a temporary and a rename, so the metrics file is never half written.
void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    f.flush();
    MIRROR_CHECK(f.good(), kIo, "cannot write metrics file " << tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  MIRROR_CHECK(!ec, kIo, "cannot rename " << tmp << " to " << path << ": " << ec.message());
}

struct EpochSums {
  double loss_sum = 0.0;
  std::int64_t correct = 0, samples = 0;
};

EpochSums reduce_sums(coll::Communicator& control, double loss_sum, std::int64_t correct, std::int64_t samples) {
  EpochSums s{loss_sum, correct, samples};
  control.allreduce(&s.loss_sum, &s.loss_sum, 1, coll::DataType::kFloat64, coll::ReduceOp::kSum);
  std::int64_t counts[2] = {correct, samples};
  control.allreduce(counts, counts, 2, coll::DataType::kInt64, coll::ReduceOp::kSum);
  s.correct = counts[0];
  s.samples = counts[1];
  return s;
}

}  // namespace

TrainSummary train(const TrainConfig& config_in, const TrainContext& ctx) {
  MIRROR_CHECK(ctx.control && ctx.gradients, kInternal, "train() needs its communicators");
  coll::Communicator& control = *ctx.control;
  const int rank = control.rank();
  const int world = control.size();
  std::ostream* out = rank == 0 ? ctx.out : nullptr;
  TrainConfig config = config_in;
  validate(config, world);

  // Device, data, model, optimizer.
  const Device device = resolve_device(config.device, ctx.local_rank, config.blas_threads);
  MIRROR_CHECK(!(device.is_cuda() && ctx.gradients->backend().buffers == coll::Buffers::kHost), kInvalidArgument,
               "--device cuda needs --backend nccl (or auto): the host backend all-reduces CPU buffers only");
  const data::Dataset dataset = data::Dataset::open(config.data);
  const data::DatasetInfo& info = dataset.info();
  Model model(config.model, info.features, info.num_classes, device);
  // auto: where the reduce-scatter and all-gather go straight between shared buffers (over MPI the
  // all-gather costs more than the half optimizer step saves: docs/benchmarks.md).
  const bool on_shm = !device.is_cuda() && std::string_view(coll::transport_name(*ctx.gradients)) == "shm";
  const bool sharded = world > 1 && (config.shard_optimizer == "on" || (config.shard_optimizer == "auto" && on_shm));
  // On the shared-memory transport the gradients of CPU models (and, with a sharded optimizer, the
  // parameters) live in shared buffers of the gradient communicator (allocated by every rank, in the same
  // order), which it reduces (and gathers) directly.
  coll::SharedBuffer grad_memory, param_memory;
  // A /dev/shm too small for them (64 MiB in a default Docker container) only costs speed: the failure is
  // the same on every rank, and the buffers stay in ordinary memory.
  std::string shared_memory_failed;
  if (on_shm && world > 1) {
    const std::size_t bytes = static_cast<std::size_t>(model.num_parameters()) * sizeof(float);
    try {
      grad_memory = ctx.gradients->allocate_shared(bytes);
      model.use_gradient_memory(grad_memory.as<float>());
      if (sharded) {
        param_memory = ctx.gradients->allocate_shared(bytes);
        model.use_parameter_memory(param_memory.as<float>());
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kIo) throw;
      shared_memory_failed = e.message();
    }
  }
  auto optimizer = Optimizer::create(optimizer_options(config), model.num_parameters(), device);

  data::SamplerOptions sampler{config.seed, world, rank, config.batch_size, info.train_size};
  data::LoaderOptions loader_options;
  loader_options.split = "train";
  loader_options.prefetch_depth = config.prefetch;
  loader_options.in_memory = config.in_memory;
  loader_options.sharding = config.sharding == "files" ? data::Sharding::kFiles : data::Sharding::kIndex;
  data::TrainLoader loader(dataset, sampler, loader_options);

  const std::int64_t micro_per_epoch = loader.steps_per_epoch();
  const std::int64_t accum = config.accum_steps;
  const std::int64_t steps_per_epoch = micro_per_epoch / accum;
  MIRROR_CHECK(steps_per_epoch > 0, kInvalidArgument,
               "one optimizer step needs " << world << " ranks x --batch-size " << config.batch_size
                                           << " x --accum-steps " << accum << " = "
                                           << world * config.batch_size * accum << " samples, but the train split of "
                                           << dataset.describe() << " has " << info.train_size);
  // The schedule spans all epochs; --max-steps only stops early (so a run cut short and resumed, or one
  // stopped by --max-steps, follows the same learning rates as the full run).
  const std::int64_t total_steps = steps_per_epoch * config.epochs;
  const LrSchedule schedule = make_schedule(config, total_steps);

  // Initial state: fresh parameters from rank 0, or a checkpoint.
  RunPosition pos;
  TrainSummary summary;
  init_and_broadcast_parameters(model, config.seed, control);
  const bool resumed = resume_from_checkpoint(config, model, *optimizer, pos, control, summary.last_checkpoint, out);

  std::vector<GradSlice> slices;
  for (const ParamInfo& p : model.parameters())
    slices.push_back({static_cast<std::size_t>(p.offset), static_cast<std::size_t>(p.numel)});
  GradientBucketer bucketer(*ctx.gradients, model.grads(), slices,
                            static_cast<std::size_t>(config.bucket_mb * 1024 * 1024), config.overlap, sharded);
  std::vector<Optimizer::Range> owned;
  for (const auto& [begin, end] : bucketer.owned_ranges())
    owned.push_back({static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end)});
  SoftmaxCrossEntropy loss(device);

  if (out) {
    *out << "mirror trainer: " << world << " rank" << (world > 1 ? "s" : "") << " on " << to_string(device)
         << (device.is_cpu() ? " (" + std::to_string(config.blas_threads) + " BLAS thread per rank)" : "")
         << ", gradients over " << coll::to_string(ctx.gradients->backend().buffers) << " ("
         << coll::transport_name(*ctx.gradients) << (grad_memory.data() ? ", in a shared buffer" : "") << ")"
         << (sharded ? ", optimizer sharded over " + std::to_string(world) + " ranks" : "") << "\n";
    if (!shared_memory_failed.empty())
      *out << "  warning: " << (grad_memory.data() ? "parameters" : "gradients")
           << " in ordinary memory (slower collectives): " << shared_memory_failed << "\n";
    *out << "  data " << config.data << ": " << info.train_size << " train, " << info.test_size << " test, "
         << info.features << " features, " << info.num_classes << " classes\n"
         << "  model " << model.spec().to_string() << ": " << model.num_parameters() << " parameters ("
         << model.num_parameters() * 4 / 1024 << " KiB), " << bucketer.bucket_count() << " gradient bucket(s)\n"
         << "  batch " << config.batch_size << " per rank, global " << config.global_batch_size
         << (accum > 1 ? " x " + std::to_string(accum) + " accumulation steps" : "") << "; " << steps_per_epoch
         << " steps per epoch, " << config.epochs << " epochs, lr " << schedule.lr_at(std::min<std::int64_t>(
                                                                            pos.step, total_steps - 1))
         << "\n";
    if (resumed) *out << "  resumed from " << summary.last_checkpoint << " at step " << pos.step << " (epoch "
                      << pos.epoch + 1 << ", micro-batch " << pos.micro << ")\n";
    out->flush();
  }

  if (rank == 0) {  // fail before training, not at the first checkpoint, when these cannot be made
    create_parent_directory(config.metrics);
    if (!config.checkpoint_dir.empty()) {
      create_parent_directory(config.checkpoint_dir + "/x");
      // Only rank 0 writes checkpoints and it is not writing now: any temporary is a killed writer's.
      const int stale = remove_stale_temporaries(config.checkpoint_dir);
      if (stale > 0 && out) *out << "removed " << stale << " partial checkpoint(s) left by an interrupted write\n";
    }
  }
  const bool bar_on = config.progress == "on" || (config.progress == "auto" && ::isatty(STDOUT_FILENO));
  ProgressBar bar(out, bar_on);
  std::int64_t last_checkpoint_step = resumed ? pos.step : -1;

  auto save_checkpoint = [&]() {
    if (config.checkpoint_dir.empty() || last_checkpoint_step == pos.step) return;
    // The partial epoch sums are stored reduced over all ranks (a collective: every rank is here).
    const EpochSums sums = reduce_sums(control, pos.loss_sum, pos.correct, pos.samples);
    // A sharded optimizer's state is current only in each rank's own ranges: gather it first.
    for (std::size_t i = 0; i < optimizer->state_names().size(); ++i) bucketer.gather(optimizer->state_data(i));
    if (rank == 0) {
      RunPosition saved = pos;
      saved.loss_sum = sums.loss_sum;
      saved.correct = sums.correct;
      saved.samples = sums.samples;
      summary.last_checkpoint =
          write_checkpoint(config.checkpoint_dir, capture_state(model, *optimizer, saved, config, world));
      prune_checkpoints(config.checkpoint_dir, config.keep);
    }
    last_checkpoint_step = pos.step;
  };

  Tensor x, dlogits;
  data::Batch batch;
  bool stop = false;
  for (; pos.epoch < config.epochs && !stop; ++pos.epoch, pos.micro = 0) {
    const auto epoch_start = Clock::now();
    double data_wait = 0.0, comm_wait = 0.0, optimizer_time = 0.0, gather_time = 0.0;
    std::int64_t steps_here = 0;
    std::int64_t trained_here = 0;
    // A checkpoint taken after an epoch's last step but before its epoch line resumes straight to that line.
    if (pos.micro < steps_per_epoch * accum) loader.start_epoch(pos.epoch, pos.micro);
    while (pos.micro + accum <= steps_per_epoch * accum) {
      if (config.max_steps > 0 && pos.step >= config.max_steps) {
        stop = true;
        break;
      }
      for (std::int64_t k = 0; k < accum; ++k) {
        MIRROR_CHECK(loader.next(batch), kInternal, "loader ended early at micro-batch " << pos.micro);
        data_wait += batch.wait_seconds;
        const Tensor* input = &x;
        Tensor cpu_view;
        if (device.is_cpu()) {
          cpu_view = Tensor::view(batch.x.data(), {batch.size, info.features}, device);
          input = &cpu_view;
        } else {
          x.resize({batch.size, info.features});
          x.copy_from_host(batch.x);
        }
        const Tensor& logits = model.forward(*input);
        const LossStats stats = loss.forward_backward(logits, batch.y, dlogits, batch.size * accum);
        pos.loss_sum += stats.loss_sum;
        pos.correct += stats.correct;
        pos.samples += stats.count;
        trained_here += stats.count;
        const bool last = k == accum - 1;
        bucketer.begin_step(last);
        model.backward(dlogits, k == 0 ? GradMode::kOverwrite : GradMode::kAccumulate,
                       [&](std::size_t i) { bucketer.on_grad_ready(i); });
        pos.micro += 1;
      }
      bucketer.finish();
      comm_wait += bucketer.last_wait_seconds();
      ++steps_here;
      const auto optimizer_start = Clock::now();
      optimizer->step(model.params(), model.grads(), schedule.lr_at(pos.step), owned);
      const auto gather_start = Clock::now();
      bucketer.gather(model.params());
      optimizer_time += std::chrono::duration<double>(gather_start - optimizer_start).count();
      gather_time += seconds_since(gather_start);
      pos.step += 1;
      bar.update(pos.epoch + 1, config.epochs, pos.micro / accum, steps_per_epoch,
                 pos.samples ? pos.loss_sum / static_cast<double>(pos.samples) : 0.0);
      if (ctx.stop_requested) {
        std::int32_t flag = ctx.stop_requested->load() ? 1 : 0;
        control.allreduce(&flag, &flag, 1, coll::DataType::kInt32, coll::ReduceOp::kMax);
        if (flag) {
          stop = true;
          summary.stopped_early = true;
          break;
        }
      }
      if (config.checkpoint_every_steps > 0 && pos.step % config.checkpoint_every_steps == 0) save_checkpoint();
    }
    synchronize(device);
    const double train_seconds = seconds_since(epoch_start);
    if (stop && pos.micro < steps_per_epoch * accum) break;  // a partial epoch: no epoch line

    bar.clear();
    const EpochSums sums = reduce_sums(control, pos.loss_sum, pos.correct, pos.samples);
    const std::int64_t trained = reduce_sums(control, 0.0, 0, trained_here).samples;
    const bool eval_now = config.eval_every > 0 &&
                          ((pos.epoch + 1) % config.eval_every == 0 || pos.epoch + 1 == config.epochs);
    double test_loss = NAN, test_acc = NAN;
    if (eval_now) {
      const EvalResult r = evaluate(model, dataset, "test", std::max<std::int64_t>(config.batch_size, 256), control);
      test_loss = summary.test_loss = r.mean_loss();
      test_acc = summary.test_acc = r.accuracy();
    }
    const double epoch_seconds = seconds_since(epoch_start);
    const double samples_per_s = train_seconds > 0 ? static_cast<double>(trained) / train_seconds : 0.0;
    summary.epoch = pos.epoch + 1;
    if (rank == 0) {
      nlohmann::ordered_json m;
      m["epoch"] = pos.epoch + 1;
      m["step"] = pos.step;
      m["lr"] = schedule.lr_at(std::max<std::int64_t>(pos.step - 1, 0));
      m["train_loss"] = sums.samples ? sums.loss_sum / static_cast<double>(sums.samples) : 0.0;
      m["train_acc"] = sums.samples ? static_cast<double>(sums.correct) / static_cast<double>(sums.samples) : 0.0;
      m["test_loss"] = eval_now ? nlohmann::ordered_json(test_loss) : nlohmann::ordered_json(nullptr);
      m["test_acc"] = eval_now ? nlohmann::ordered_json(test_acc) : nlohmann::ordered_json(nullptr);
      m["samples_per_s"] = samples_per_s;
      m["epoch_s"] = epoch_seconds;
      m["data_wait_frac"] = train_seconds > 0 ? data_wait / train_seconds : 0.0;
      // Rank 0's view: mean step time, and the time per step spent waiting for gradient all-reduces after
      // backward (all of the communication without overlap; only the part not hidden with it).
      m["step_s"] = steps_here ? train_seconds / static_cast<double>(steps_here) : 0.0;
      m["comm_wait_s"] = steps_here ? comm_wait / static_cast<double>(steps_here) : 0.0;
      // The optimizer step (this rank's part of it when sharded) and the sharded step's all-gather of
      // the updated parameters (0 when not sharded), per step.
      m["optimizer_s"] = steps_here ? optimizer_time / static_cast<double>(steps_here) : 0.0;
      m["gather_s"] = steps_here ? gather_time / static_cast<double>(steps_here) : 0.0;
      pos.metrics_jsonl += m.dump() + "\n";
      if (!config.metrics.empty()) write_file_atomically(config.metrics, pos.metrics_jsonl);
      if (out) {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "epoch %lld/%lld  loss %.4f  acc %.4f  test_loss %s  test_acc %s  samples/s %.0f  time %.1fs\n",
                      static_cast<long long>(pos.epoch + 1), static_cast<long long>(config.epochs),
                      m["train_loss"].get<double>(), m["train_acc"].get<double>(),
                      eval_now ? std::to_string(test_loss).substr(0, 6).c_str() : "-",
                      eval_now ? std::to_string(test_acc).substr(0, 6).c_str() : "-", samples_per_s, epoch_seconds);
        *out << line << std::flush;
      }
    }
    pos.loss_sum = 0.0;
    pos.correct = pos.samples = 0;
    pos.micro = steps_per_epoch * accum;  // the epoch's position is its end until the loop moves on
    if (config.checkpoint_every_steps == 0) {
      // Stored as the start of the next epoch so that a resume continues there.
      RunPosition here = pos;
      pos.epoch += 1;
      pos.micro = 0;
      save_checkpoint();
      pos = here;
    }
  }
  bar.clear();
  if (pos.epoch >= config.epochs) {  // the loop ran out: record the end as "epoch = epochs, micro 0"
    pos.micro = 0;
  }
  save_checkpoint();  // the final state (no-op when the last step was already saved)
  summary.steps = pos.step;
  if (out && !summary.last_checkpoint.empty()) *out << "checkpoint: " << summary.last_checkpoint << "\n";
  return summary;
}

}  // namespace mirror::train
