// trainer.cc — the data-parallel training loop (trainer.h): model replicas, this rank's slice of every
// global batch, bucketed gradient averaging overlapped with backward, identical optimizer steps, rank-0
// checkpoints, data-parallel evaluation, per-epoch lines and metrics.
#include "trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "batch_tensor.h"
#include "mirror/agreed_error.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/device.h"
#include "mirror/nn/finite.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/weight_decay.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/evaluate.h"
#include "mirror/train/setup_agreement.h"

namespace mirror::train {
namespace {

using Clock = std::chrono::steady_clock;
using telemetry::Timeline;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

nn::OptimizerOptions optimizer_options(const TrainConfig& c) {
  nn::OptimizerOptions o;
  o.kind = c.optimizer;
  o.momentum = static_cast<float>(c.momentum);
  o.nesterov = c.nesterov;
  o.weight_decay = static_cast<float>(c.weight_decay);
  o.beta1 = static_cast<float>(c.beta1);
  o.beta2 = static_cast<float>(c.beta2);
  o.eps = static_cast<float>(c.eps);
  return o;
}

nn::LrSchedule make_schedule(const TrainConfig& c, std::int64_t total_steps, std::int64_t steps_per_epoch) {
  nn::ScheduleOptions s;
  s.base_lr = static_cast<float>(c.lr);
  if (c.scale_lr == LrScaling::kLinear)
    s.base_lr = nn::scale_lr_linear(s.base_lr, c.global_batch_size, c.reference_batch);
  s.warmup_steps = c.warmup_steps;
  s.decay = c.decay;
  s.total_steps = std::max<std::int64_t>(total_steps, c.warmup_steps + 1);
  s.min_lr = static_cast<float>(std::min(c.min_lr, static_cast<double>(s.base_lr)));
  s.step_every = c.decay_step_size;
  s.gamma = static_cast<float>(c.gamma);
  if (!c.lr_milestones.empty()) {  // epochs -> the first step of each
    s.decay = nn::DecayKind::kMilestones;
    for (std::int64_t epoch : c.lr_milestones) s.milestones.push_back(epoch * steps_per_epoch);
  }
  return nn::LrSchedule(s);
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

double per_step(double total, std::int64_t steps) { return steps ? total / static_cast<double>(steps) : 0.0; }

// The epoch's TensorBoard scalars from its metrics line (so both say the same): losses, accuracies,
// throughput and the step's split into data wait, compute, communication wait and optimizer (s per step);
// with fp16 gradients the loss scale and the skipped steps.
std::vector<std::pair<std::string, double>> epoch_scalars(const nlohmann::ordered_json& m) {
  std::vector<std::pair<std::string, double>> v;
  for (const char* key : {"train_loss", "train_acc", "test_loss", "test_acc", "samples_per_s", "step_s",
                          "data_wait_s", "compute_s", "comm_wait_s", "optimizer_s", "gather_s", "loss_scale",
                          "skipped_steps"})
    if (m.contains(key) && m[key].is_number()) v.emplace_back(std::string("epoch/") + key, m[key].get<double>());
  return v;
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, const TrainContext& context)
    : config_(config), ctx_(context), control_(*context.control), rank_(control_.rank()), world_(control_.size()),
      out_(rank_ == 0 ? context.out : nullptr), reducer_(*context.gradients) {
  // What every rank finds wrong alike before training (flags, data, model, checkpoint) ends the job with one
  // error line and exit code 3 (setup_agreement.h): the stages without collectives first, then the resume.
  run_agreed_setup(control_, [this] {
    validate(config_, world_);
    setup_model();
    setup_data_and_optimizer();
  });
  setup_shared_memory();
  run_agreed_setup(control_, [this] { restore_state(); });
  setup_gradient_sync();
  setup_telemetry();
  print_banner();
  prepare_outputs();
}

void Trainer::setup_model() {
  device_ = nn::resolve_device(config_.device, ctx_.local_rank, config_.blas_threads);
  nn::set_cpu_conv_algorithm(config_.conv_algorithm);
  MIRROR_CHECK(!(device_.is_cuda() && ctx_.gradients->backend().buffers == coll::Buffers::kHost), kInvalidArgument,
               "--device cuda needs --backend nccl (or auto): the host backend all-reduces CPU buffers only");
  dataset_.emplace(data::Dataset::open(config_.data));
  const data::DatasetInfo& info = dataset_->info();
  model_ = nn::build_model(config_.model, nn::Shape(info.sample_shape), info.num_classes, device_);
  check_dataset_fits(*model_, *dataset_);
  // auto: where the reduce-scatter and all-gather go straight between shared buffers (over MPI the
  // all-gather costs more than the half optimizer step saves: docs/benchmarks.md).
  const bool on_shm = !device_.is_cuda() && std::string_view(coll::transport_name(*ctx_.gradients)) == "shm";
  sharded_ = world_ > 1 && (config_.shard_optimizer == Toggle::kOn || (config_.shard_optimizer == Toggle::kAuto && on_shm));
}

void Trainer::setup_shared_memory() {
  const bool on_shm = !device_.is_cuda() && std::string_view(coll::transport_name(*ctx_.gradients)) == "shm";
  // On the shared-memory transport the gradients of CPU models (and, with a sharded optimizer, the
  // parameters) live in shared buffers of the gradient communicator (allocated by every rank, in the same
  // order), which it reduces (and gathers) directly. A /dev/shm too small for them (64 MiB in a default
  // Docker container) only costs speed: the failure is the same on every rank, and the buffers stay in
  // ordinary memory.
  // 16-bit gradients are reduced in their own buffer (GradWire): that one is shared instead.
  if (!on_shm || world_ == 1) return;
  const auto numel = static_cast<std::size_t>(model_->num_parameters());
  const std::size_t bytes = numel * sizeof(float);
  try {
    if (config_.grad_dtype == GradDtype::kFp32) {
      grad_memory_ = ctx_.gradients->allocate_shared(bytes);
      model_->use_gradient_memory(grad_memory_.as<float>());
    } else {
      wire_memory_ = ctx_.gradients->allocate_shared(numel * sizeof(std::uint16_t));
    }
    if (sharded_) {
      param_memory_ = ctx_.gradients->allocate_shared(bytes);
      model_->use_parameter_memory(param_memory_.as<float>());
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kIo) throw;
    shared_memory_failed_ = e.message();
  }
}

void Trainer::setup_data_and_optimizer() {
  optimizer_ = nn::Optimizer::create(optimizer_options(config_), model_->num_parameters(), device_);
  if (!config_.decay_bn_and_bias) optimizer_->set_decay_exempt(nn::decay_exempt_ranges(model_->parameters()));
  const data::DatasetInfo& info = dataset_->info();
  data::SamplerOptions sampler{config_.seed, world_, rank_, config_.batch_size, info.train_size};
  data::LoaderOptions loader_options;
  loader_options.split = "train";
  loader_options.prefetch_depth = config_.prefetch;
  loader_options.in_memory = config_.in_memory;
  loader_options.sharding = config_.sharding;
  loader_options.augment.crop_padding = config_.random_crop;
  loader_options.augment.hflip = config_.hflip;
  loader_ = std::make_unique<data::TrainLoader>(*dataset_, sampler, loader_options);

  accum_ = config_.accum_steps;
  steps_per_epoch_ = loader_->steps_per_epoch() / accum_;
  MIRROR_CHECK(steps_per_epoch_ > 0, kInvalidArgument,
               "one optimizer step needs " << world_ << " ranks x --batch-size " << config_.batch_size
                                           << " x --accum-steps " << accum_ << " = "
                                           << world_ * config_.batch_size * accum_ << " samples, but the train split of "
                                           << dataset_->describe() << " has " << info.train_size);
  // The schedule spans all epochs; --max-steps only stops early (so a run cut short and resumed, or one
  // stopped by --max-steps, follows the same learning rates as the full run).
  total_steps_ = steps_per_epoch_ * config_.epochs;
  schedule_.emplace(make_schedule(config_, total_steps_, steps_per_epoch_));
  loss_.emplace(device_);
}

void Trainer::restore_state() {
  init_and_broadcast_parameters(*model_, config_.seed, control_);
  resumed_ = resume_from_checkpoint(config_, *model_, *optimizer_, pos_, control_, summary_.last_checkpoint, out_);
  // fp16's loss scale goes on from the checkpoint's (one written without fp16 starts from --loss-scale).
  if (config_.grad_dtype == GradDtype::kFp16) {
    scaler_ = LossScaler(config_.loss_scale, config_.loss_scale_growth_interval);
    if (resumed_ && pos_.loss_scale > 0.0) scaler_.restore(pos_.loss_scale, pos_.loss_scale_good_steps);
  }
  last_checkpoint_step_ = resumed_ ? pos_.step : -1;
  best_.emplace(config_.keep_best, config_.min_delta);
  if (rank_ == 0) best_->replay(pos_.metrics_jsonl);  // rank 0 judges; the checkpoint's metrics hold the state
}

void Trainer::setup_gradient_sync() {
  std::vector<GradSlice> slices;
  for (const nn::ParamInfo& p : model_->parameters())
    slices.push_back({static_cast<std::size_t>(p.offset), static_cast<std::size_t>(p.numel)});
  bucketer_ = std::make_unique<GradientBucketer>(*ctx_.gradients, model_->grads(), slices,
                                                 static_cast<std::size_t>(config_.bucket_mb * 1024 * 1024),
                                                 config_.overlap, sharded_,
                                                 GradWire{wire_type(config_.grad_dtype), wire_memory_.as<std::uint16_t>(), device_});
  for (const auto& [begin, end] : bucketer_->owned_ranges())
    owned_.push_back({static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end)});
}

void Trainer::setup_telemetry() {
  telemetry::TrainingTelemetryOptions o;
  o.tensorboard_dir = config_.tensorboard;
  o.tensorboard_every = config_.tensorboard_every;
  o.timeline_path = config_.timeline;
  o.timeline_steps = config_.timeline_steps;
  telemetry_ = std::make_unique<telemetry::TrainingTelemetry>(o, control_, pos_.step);
  bucketer_->set_timeline(&telemetry_->timeline());
}

void Trainer::print_banner() const {
  if (!out_) return;
  const data::DatasetInfo& info = dataset_->info();
  std::ostream& o = *out_;
  o << "mirror trainer: " << world_ << " rank" << (world_ > 1 ? "s" : "") << " on " << to_string(device_)
    << (device_.is_cpu() ? " (" + nn::cpu_kernels_description() + " per rank)" : "")
    << ", gradients over " << coll::to_string(ctx_.gradients->backend().buffers) << " ("
    << coll::transport_name(*ctx_.gradients)
    << (grad_memory_.data() || wire_memory_.data() ? ", in a shared buffer" : "") << ") as "
    << grad_dtype_text() << (sharded_ ? ", optimizer sharded over " + std::to_string(world_) + " ranks" : "") << "\n";
  o << "  " << coll::MpiRuntime::hosts_summary() << "\n";
  if (!shared_memory_failed_.empty())
    o << "  warning: " << (grad_memory_.data() || wire_memory_.data() ? "parameters" : "gradients")
      << " in ordinary memory (slower collectives): " << shared_memory_failed_ << "\n";
  o << "  data " << config_.data << ": " << info.train_size << " train, " << info.test_size << " test, "
    << info.features << " features, " << info.num_classes << " classes\n"
    << "  model " << config_.model << ": " << model_->num_parameters() << " parameters ("
    << model_->num_parameters() * 4 / 1024 << " KiB), " << bucketer_->bucket_count() << " gradient bucket(s)\n"
    << nn::layer_table(*model_)
    << "  batch " << config_.batch_size << " per rank, global " << config_.global_batch_size
    << (accum_ > 1 ? " x " + std::to_string(accum_) + " accumulation steps" : "") << "; " << steps_per_epoch_
    << " steps per epoch, " << config_.epochs << " epochs, lr "
    << schedule_->lr_at(std::min<std::int64_t>(pos_.step, total_steps_ - 1)) << "\n";
  if (config_.weight_decay > 0) o << "  " << weight_decay_line() << "\n";
  if (resumed_)
    o << "  resumed from " << summary_.last_checkpoint << " at step " << pos_.step << " (epoch " << pos_.epoch + 1
      << ", micro-batch " << pos_.micro << ")\n";
  o.flush();
}

// "weight decay 0.01 on 93120 of 93284 parameters (BatchNorm weight/bias and biases exempt)".
std::string Trainer::weight_decay_line() const {
  std::int64_t exempt = 0;
  for (const auto& r : optimizer_->decay_exempt()) exempt += r.end - r.begin;
  std::ostringstream o;
  o << "weight decay " << config_.weight_decay << " on " << model_->num_parameters() - exempt << " of "
    << model_->num_parameters() << " parameters"
    << (config_.decay_bn_and_bias ? " (--decay-bn-and-bias)" : " (BatchNorm weight/bias and biases exempt)");
  return o.str();
}

void Trainer::prepare_outputs() {
  if (rank_ == 0) {  // fail before training, not at the first checkpoint, when these cannot be made
    create_parent_directory(config_.metrics);
    create_parent_directory(config_.timeline);
    if (!config_.checkpoint_dir.empty()) {
      create_parent_directory(config_.checkpoint_dir + "/x");
      // Only rank 0 writes checkpoints and it is not writing now: any temporary is a killed writer's.
      const int stale = remove_stale_temporaries(config_.checkpoint_dir);
      if (stale > 0 && out_) *out_ << "removed " << stale << " partial checkpoint(s) left by an interrupted write\n";
    }
  }
  const bool bar_on = config_.progress == Toggle::kOn || (config_.progress == Toggle::kAuto && ::isatty(STDOUT_FILENO));
  bar_ = std::make_unique<ProgressBar>(out_, bar_on);
}

TrainSummary Trainer::run() {
  while (pos_.epoch < config_.epochs) {
    const EpochEnd end = run_epoch();
    if (end == EpochEnd::kStoppedInside) break;  // the position stays inside the epoch
    pos_.epoch += 1;
    pos_.micro = 0;
    if (end == EpochEnd::kStoppedAtEnd) break;
  }
  bar_->clear();
  if (pos_.epoch >= config_.epochs) pos_.micro = 0;  // the loop ran out: record the end as "epoch = epochs, micro 0"
  save_checkpoint();  // the final state (no-op when the last step was already saved)
  telemetry_->finish();  // collective: the merged timeline
  summary_.steps = pos_.step;
  if (out_ && !summary_.last_checkpoint.empty()) *out_ << "checkpoint: " << summary_.last_checkpoint << "\n";
  return summary_;
}

Trainer::EpochEnd Trainer::run_epoch() {
  EpochTimes times;
  times.start = Clock::now();
  bool stop = false;
  // A checkpoint taken after an epoch's last step but before its epoch line resumes straight to that line.
  if (pos_.micro < micro_per_epoch()) loader_->start_epoch(pos_.epoch, pos_.micro);
  while (pos_.micro + accum_ <= micro_per_epoch()) {
    if (config_.max_steps > 0 && pos_.step >= config_.max_steps) {
      stop = true;
      break;
    }
    train_step(times);
    if (stop_requested()) {
      stop = true;
      summary_.stopped_early = true;
      break;
    }
    if (config_.checkpoint_every_steps > 0 && pos_.step % config_.checkpoint_every_steps == 0) save_checkpoint();
  }
  nn::synchronize(device_);
  times.train = seconds_since(times.start);
  if (stop && pos_.micro < micro_per_epoch()) return EpochEnd::kStoppedInside;  // a partial epoch: no epoch line
  end_epoch(times);
  return stop || early_stopped_ || stop_agreed_ ? EpochEnd::kStoppedAtEnd : EpochEnd::kCompleted;
}

void Trainer::train_step(EpochTimes& times) {
  Timeline& timeline = telemetry_->timeline();
  timeline.begin_step(pos_.step + 1);  // steps counted from 1, as TensorBoard's
  const double loss_before = pos_.loss_sum;
  const std::int64_t samples_before = pos_.samples;
  bucketer_->set_scale(static_cast<float>(scaler_.scale()));
  for (std::int64_t k = 0; k < accum_; ++k) micro_step(k, times);
  {
    const Timeline::Scope span(timeline, "gradient wait", "communication");
    bucketer_->finish();
  }
  times.comm_wait += bucketer_->last_wait_seconds();
  // Collective; throws before a non-finite step is applied; false: fp16 overflowed, the step is skipped
  // (the parameters stay as they are on every rank, the schedule and the data move on).
  const bool apply = agree_on_step(pos_.loss_sum - loss_before);
  ++times.steps;
  if (!apply) ++times.skipped;
  const auto optimizer_start = Clock::now();
  const float lr = schedule_->lr_at(pos_.step);
  if (apply) {
    const Timeline::Scope span(timeline, "optimizer", "optimizer");
    optimizer_->step(model_->params(), model_->grads(), lr, owned_);
    scaler_.on_good_step();
  }
  const auto gather_start = Clock::now();
  if (apply && bucketer_->sharded()) {
    const Timeline::Scope span(timeline, "all-gather", "communication");
    bucketer_->gather(model_->params());
  }
  times.optimizer += std::chrono::duration<double>(gather_start - optimizer_start).count();
  times.gather += seconds_since(gather_start);
  pos_.step += 1;
  if (times.steps == kSteadySkipSteps) {
    times.steady_start = Clock::now();
    times.trained_before_steady = times.trained;
  }
  telemetry_->after_step(pos_.step, pos_.loss_sum - loss_before, pos_.samples - samples_before, lr);
  bar_->update(pos_.epoch + 1, config_.epochs, pos_.micro / accum_, steps_per_epoch_,
               pos_.samples ? pos_.loss_sum / static_cast<double>(pos_.samples) : 0.0);
}

void Trainer::micro_step(std::int64_t k, EpochTimes& times) {
  Timeline& timeline = telemetry_->timeline();
  const std::int64_t wait_start = telemetry::now_ns();
  MIRROR_CHECK(loader_->next(batch_), kInternal, "loader ended early at micro-batch " << pos_.micro);
  timeline.add("data wait", "data", wait_start, telemetry::now_ns());
  times.data_wait += batch_.wait_seconds;
  const std::int64_t forward_start = telemetry::now_ns();
  const nn::Tensor input = batch_tensor(batch_, *model_, staging_);
  nn::ForwardContext context;
  context.seed = config_.seed;
  context.step = pos_.step;
  context.sample_ids = batch_.indices;
  context.reducer = world_ > 1 && config_.sync_bn ? &reducer_ : nullptr;
  const nn::Tensor& logits = model_->forward(input, context);
  const nn::LossStats stats = loss_->forward_backward(logits, batch_.y, dlogits_, batch_.size * accum_);
  timeline.add("forward", "compute", forward_start, telemetry::now_ns());  // with the loss
  pos_.loss_sum += stats.loss_sum;
  pos_.correct += stats.correct;
  pos_.samples += stats.count;
  times.trained += stats.count;
  bucketer_->begin_step(k == accum_ - 1);
  const std::int64_t backward_start = telemetry::now_ns();
  model_->backward(dlogits_, k == 0 ? nn::GradMode::kOverwrite : nn::GradMode::kAccumulate,
                   [this](std::size_t i) { bucketer_->on_grad_ready(i); });
  timeline.add("backward", "compute", backward_start, telemetry::now_ns());
  pos_.micro += 1;
}

// One small all-reduce per step carries both verdicts every rank must share: a stop request (SIGTERM on any
// rank stops all after this step) and whether this step's loss (per rank) or its averaged gradients (this
// rank's owned ranges: all of them, or its shard) hold a NaN or Inf. The gradient test is one pass over the
// reduced gradients (docs/training.md measures it).
bool Trainer::agree_on_step(double step_loss) {
  std::int64_t bad_grads = 0;
  for (const nn::Optimizer::Range& r : owned_)
    bad_grads += nn::count_non_finite(device_, model_->grads() + r.begin, r.end - r.begin);
  std::int32_t flags[3] = {ctx_.stop_requested && ctx_.stop_requested->load() ? 1 : 0, std::isfinite(step_loss) ? 0 : 1,
                           bad_grads > 0 ? 1 : 0};
  control_.allreduce(flags, flags, 3, coll::DataType::kInt32, coll::ReduceOp::kMax);
  stop_agreed_ = flags[0] != 0;
  if (flags[1] == 0 && flags[2] == 0) return true;
  if (flags[1] == 0 && scaler_.can_skip()) {
    skip_overflowed_step();
    return false;
  }
  bar_->clear();
  std::ostringstream what;
  what << (flags[1] ? "the loss" : "") << (flags[1] && flags[2] ? " and " : "")
       << (flags[2] ? "the averaged gradients" : "");
  throw_diverged(pos_.step + 1, what.str() + " turned non-finite (NaN or Inf); the step was not applied");
}

// fp16: the reduced gradients overflowed float16 at this loss scale (every rank saw the same verdict).
void Trainer::skip_overflowed_step() {
  if (out_) {
    bar_->clear();
    *out_ << "warning: step " << pos_.step + 1 << " (epoch " << pos_.epoch + 1
          << "): float16 gradients overflowed at loss scale " << static_cast<long long>(scaler_.scale())
          << "; step skipped, loss scale now " << static_cast<long long>(scaler_.scale() / 2) << "\n";
    out_->flush();
  }
  scaler_.on_overflow();
}

// "fp32", "bf16", or "fp16 (loss scale 65536, halved at an overflow, doubled after 2000 good steps)".
std::string Trainer::grad_dtype_text() const {
  std::ostringstream o;
  o << to_string(config_.grad_dtype);
  if (scaler_.enabled())
    o << " (loss scale " << static_cast<long long>(scaler_.scale()) << ", halved at an overflow, doubled after "
      << config_.loss_scale_growth_interval << " good steps)";
  return o.str();
}

// `step` counted from 1, as in TensorBoard and the timeline.
void Trainer::throw_diverged(std::int64_t step, const std::string& what) const {
  const std::string kept = summary_.last_checkpoint.empty() ? std::string("no checkpoint was written")
                                                            : "the last good checkpoint is " + summary_.last_checkpoint;
  const Error e(ErrorKind::kInvalidArgument,
                "training diverged at step " + std::to_string(step) + " (epoch " +
                    std::to_string(pos_.epoch + 1) + "): " + what + "; " + kept +
                    ". Lower --lr, add --warmup-steps, or check the data",
                __FILE__, __LINE__);
  throw AgreedError(e, exit_code::kNonFinite);
}

bool Trainer::stop_requested() { return stop_agreed_; }

void Trainer::end_epoch(const EpochTimes& times) {
  bar_->clear();
  const bool evaluate_now = config_.eval_every > 0 &&
                            ((pos_.epoch + 1) % config_.eval_every == 0 || pos_.epoch + 1 == config_.epochs);
  double test_loss = NAN, test_acc = NAN;
  bool evaluated = evaluate_now;
  if (evaluate_now) {
    const Timeline::Scope span(telemetry_->timeline(), "evaluation", "evaluation");
    agree_on_buffers();
    const EvalResult r = evaluate(*model_, *dataset_, "test", std::max<std::int64_t>(config_.batch_size, 256),
                                  control_, {}, ctx_.stop_requested);
    if (r.abandoned) {
      evaluated = false;
      abandon_for_stop();
    } else {
      test_loss = summary_.test_loss = r.mean_loss();
      test_acc = summary_.test_acc = r.accuracy();
    }
  }
  const std::string line = metrics_line(times, test_loss, test_acc, evaluated);
  summary_.epoch = pos_.epoch + 1;
  if (rank_ == 0 && out_) *out_ << line << std::flush;
  pos_.loss_sum = 0.0;
  pos_.correct = pos_.samples = 0;
  pos_.micro = micro_per_epoch();  // the epoch's position is its end until the loop moves on
  const BestVerdict verdict = judge_epoch();
  const bool keep_best = verdict.improved && !config_.checkpoint_dir.empty();
  if (config_.checkpoint_every_steps == 0 || keep_best) save_epoch_checkpoint();
  if (keep_best && rank_ == 0) keep_as_best(summary_.last_checkpoint, config_.checkpoint_dir);
  if (verdict.stop) {
    early_stopped_ = true;
    if (out_)
      *out_ << "early stop: " << best_->key() << " has not improved by more than " << config_.min_delta << " for "
            << best_->since_best() << " evaluation(s); best " << best_->best() << " at step " << best_->best_step()
            << "\n";
  }
}

// A stop request reached some rank during the evaluation, which every rank then left (evaluate's reduction
// agreed on it): the epoch's line has no test figures, its checkpoint is still written, and the run stops there.
void Trainer::abandon_for_stop() {
  stop_agreed_ = true;
  summary_.stopped_early = true;
  if (out_)
    *out_ << "stop requested during the evaluation of epoch " << pos_.epoch + 1
          << ": evaluation abandoned; saving the epoch's state and stopping\n";
}

// Rank 0 judges the epoch's metrics line (--keep-best, --early-stop) and tells the others (collective).
Trainer::BestVerdict Trainer::judge_epoch() {
  if (!best_->enabled()) return {};
  std::int32_t v[2] = {0, 0};
  if (rank_ == 0) {
    const nlohmann::ordered_json m = nlohmann::ordered_json::parse(pos_.metrics_jsonl.substr(
        pos_.metrics_jsonl.rfind('\n', pos_.metrics_jsonl.size() - 2) == std::string::npos
            ? 0
            : pos_.metrics_jsonl.rfind('\n', pos_.metrics_jsonl.size() - 2) + 1));
    const double value = m[best_->key()].is_number() ? m[best_->key()].get<double>() : NAN;
    v[0] = best_->observe(value, pos_.step) ? 1 : 0;
    v[1] = config_.early_stop > 0 && best_->since_best() >= config_.early_stop ? 1 : 0;
  }
  control_.broadcast(v, 2, coll::DataType::kInt32, 0);
  return {v[0] != 0, v[1] != 0};
}

// Collective (the sums); rank 0 appends the JSON object to the metrics and returns the printed line.
std::string Trainer::metrics_line(const EpochTimes& t, double test_loss, double test_acc, bool evaluated) {
  const EpochSums sums = reduce_sums(control_, pos_.loss_sum, pos_.correct, pos_.samples);
  const std::int64_t trained = reduce_sums(control_, 0.0, 0, t.trained).samples;
  const bool steady = t.trained_before_steady >= 0 && t.trained > t.trained_before_steady;
  const std::int64_t steady_trained =
      reduce_sums(control_, 0.0, 0, steady ? t.trained - t.trained_before_steady : 0).samples;
  const double steady_seconds =
      steady ? std::chrono::duration<double>(t.start - t.steady_start).count() + t.train : 0.0;
  const double epoch_seconds = seconds_since(t.start);
  const double samples_per_s = t.train > 0 ? static_cast<double>(trained) / t.train : 0.0;
  if (rank_ != 0) return "";
  nlohmann::ordered_json m;
  m["epoch"] = pos_.epoch + 1;
  m["step"] = pos_.step;
  m["lr"] = schedule_->lr_at(std::max<std::int64_t>(pos_.step - 1, 0));
  m["train_loss"] = sums.samples ? sums.loss_sum / static_cast<double>(sums.samples) : 0.0;
  m["train_acc"] = sums.samples ? static_cast<double>(sums.correct) / static_cast<double>(sums.samples) : 0.0;
  m["test_loss"] = evaluated ? nlohmann::ordered_json(test_loss) : nlohmann::ordered_json(nullptr);
  m["test_acc"] = evaluated ? nlohmann::ordered_json(test_acc) : nlohmann::ordered_json(nullptr);
  m["samples_per_s"] = samples_per_s;
  // The same after warm-up: the steps after this run's first kSteadySkipSteps of the epoch (null if none).
  m["steady_samples_per_s"] = steady && steady_seconds > 0
                                  ? nlohmann::ordered_json(static_cast<double>(steady_trained) / steady_seconds)
                                  : nlohmann::ordered_json(nullptr);
  m["epoch_s"] = epoch_seconds;
  m["data_wait_frac"] = t.train > 0 ? t.data_wait / t.train : 0.0;
  // Rank 0's view: mean step time, and the time per step spent waiting for gradient all-reduces after
  // backward (all of the communication without overlap; only the part not hidden with it).
  m["step_s"] = per_step(t.train, t.steps);
  m["comm_wait_s"] = per_step(t.comm_wait, t.steps);
  // The optimizer step (this rank's part of it when sharded) and the sharded step's all-gather of the
  // updated parameters (0 when not sharded), per step.
  m["optimizer_s"] = per_step(t.optimizer, t.steps);
  m["gather_s"] = per_step(t.gather, t.steps);
  // The type the gradients travelled in; fp16: the loss scale at the epoch's end and the steps skipped.
  m["grad_dtype"] = to_string(config_.grad_dtype);
  if (scaler_.enabled()) {
    m["loss_scale"] = scaler_.scale();
    m["skipped_steps"] = t.skipped;
  }
  // The rest of the step, per step: waiting for the loader, and compute (forward, loss, backward and the
  // small things between).
  m["data_wait_s"] = per_step(t.data_wait, t.steps);
  m["compute_s"] = m["step_s"].get<double>() - m["data_wait_s"].get<double>() - m["comm_wait_s"].get<double>() -
                   m["optimizer_s"].get<double>() - m["gather_s"].get<double>();
  pos_.metrics_jsonl += m.dump() + "\n";
  telemetry_->epoch(pos_.step, epoch_scalars(m));  // the same numbers, keyed by the global step; flushed
  if (!config_.metrics.empty()) write_file_atomically(config_.metrics, pos_.metrics_jsonl);
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %lld/%lld  loss %.4f  acc %.4f  test_loss %s  test_acc %s  samples/s %.0f  time %.1fs\n",
                static_cast<long long>(pos_.epoch + 1), static_cast<long long>(config_.epochs),
                m["train_loss"].get<double>(), m["train_acc"].get<double>(),
                evaluated ? std::to_string(test_loss).substr(0, 6).c_str() : "-",
                evaluated ? std::to_string(test_acc).substr(0, 6).c_str() : "-", samples_per_s, epoch_seconds);
  return line;
}

// best.h5 in `dir`: a hard link to `checkpoint` (a copy where links are not possible) made under a
// temporary name and renamed over the old one, so best.h5 is always a whole checkpoint. Pruning only
// removes ckpt-*.h5 names, and the link keeps the data when the ckpt-*.h5 name goes.
void keep_as_best(const std::string& checkpoint, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::path(dir) / (".best.h5.tmp." + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(checkpoint, tmp, ec);
  if (ec) fs::copy_file(checkpoint, tmp, fs::copy_options::overwrite_existing, ec);
  MIRROR_CHECK(!ec, kIo, "cannot copy " << checkpoint << " to " << tmp.string() << ": " << ec.message());
  fs::rename(tmp, fs::path(dir) / "best.h5", ec);
  MIRROR_CHECK(!ec, kIo, "cannot rename " << tmp.string() << " to best.h5 in " << dir << ": " << ec.message());
}

void Trainer::save_epoch_checkpoint() {
  const RunPosition here = pos_;
  pos_.epoch += 1;
  pos_.micro = 0;
  save_checkpoint();
  pos_ = here;
}

void Trainer::save_checkpoint() {
  if (config_.checkpoint_dir.empty() || last_checkpoint_step_ == pos_.step) return;
  const Timeline::Scope span(telemetry_->timeline(), "checkpoint", "checkpoint");
  // The partial epoch sums are stored reduced over all ranks (a collective: every rank is here).
  const EpochSums sums = reduce_sums(control_, pos_.loss_sum, pos_.correct, pos_.samples);
  // A sharded optimizer's state is current only in each rank's own ranges: gather it first.
  for (std::size_t i = 0; i < optimizer_->state_names().size(); ++i) bucketer_->gather(optimizer_->state_data(i));
  agree_on_buffers();
  // Never a checkpoint of broken parameters (finite gradients can still overflow them): every rank holds
  // all of them after the gathers, and the ranks agree on the verdict.
  std::int32_t bad = nn::count_non_finite(device_, model_->params(), model_->num_parameters()) > 0 ? 1 : 0;
  control_.allreduce(&bad, &bad, 1, coll::DataType::kInt32, coll::ReduceOp::kMax);
  if (bad) throw_diverged(pos_.step, "the parameters it produced are not finite (NaN or Inf) and were not saved");
  if (rank_ == 0) {
    RunPosition saved = pos_;
    saved.loss_sum = sums.loss_sum;
    saved.correct = sums.correct;
    saved.samples = sums.samples;
    saved.loss_scale = scaler_.enabled() ? scaler_.scale() : 0.0;
    saved.loss_scale_good_steps = scaler_.enabled() ? scaler_.good_steps() : 0;
    summary_.last_checkpoint =
        write_checkpoint(config_.checkpoint_dir, capture_state(*model_, *optimizer_, saved, config_, world_));
    prune_checkpoints(config_.checkpoint_dir, config_.keep);
  }
  last_checkpoint_step_ = pos_.step;
}

void Trainer::agree_on_buffers() {
  if (!config_.sync_bn) average_buffers(*model_, *ctx_.gradients);
}

TrainSummary train(const TrainConfig& config, const TrainContext& context) {
  MIRROR_CHECK(context.control && context.gradients, kInternal, "train() needs its communicators");
  Trainer trainer(config, context);
  return trainer.run();
}

}  // namespace mirror::train
