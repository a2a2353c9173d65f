// trainer_setup.cc — trainer.h's setup: the dataset and the model's graph (checked alike on every rank), the
// model built into its memory (shared buffers where the transport reads them directly), the optimizer, loader and
// schedule, the initial state (rank 0's parameters or a checkpoint), the gradient bucketer, telemetry, the step
// engine and epoch reporter, and the banner.
#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <sstream>

#include "mirror/coll/runtime.h"
#include "mirror/data/windows.h"
#include "mirror/error.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/weight_decay.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/checkpoint_model.h"
#include "mirror/train/evaluate.h"
#include "mirror/train/language_model.h"
#include "mirror/train/setup_agreement.h"
#include "trainer.h"

namespace mirror::train {
namespace {

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

}  // namespace

Trainer::Trainer(const TrainConfig& config, const TrainContext& context)
    : config_(config), ctx_(context), control_(*context.control), rank_(control_.rank()), world_(control_.size()),
      out_(rank_ == 0 ? context.out : nullptr), device_(context.device), reducer_(*context.gradients) {
  // What every rank finds wrong alike before training (data, model, checkpoint) ends the job with one error line
  // and exit code 3 (setup_agreement.h): the stages without collectives first, then the resume.
  run_agreed_setup(control_, [this] {
    setup_model_graph();
    setup_data();
  });
  setup_model_and_optimizer();
  run_agreed_setup(control_, [this] { restore_state(); });
  setup_gradient_sync();
  setup_telemetry();
  setup_step_and_epoch();
  print_banner();
  prepare_outputs();
}

void Trainer::setup_model_graph() {
  nn::set_cpu_conv_algorithm(config_.conv_algorithm);
  nn::set_compute_precision(config_.precision, device_);
  MIRROR_CHECK(!(device_.is_cuda() && ctx_.gradients->backend().buffers == coll::Buffers::kHost), kInvalidArgument,
               "--device cuda needs --backend nccl (or auto): the host backend all-reduces CPU buffers only");
  dataset_.emplace(data::Dataset::open(config_.data));
  const data::DatasetInfo& info = dataset_->info();
  if (!config_.init_from.empty()) take_init_checkpoint();
  MIRROR_CHECK(info.text || config_.context == 0, kInvalidArgument,
               "--context is for language models on token datasets; " << dataset_->describe() << " holds samples");
  nn::Shape sample(info.sample_shape);
  std::int64_t classes = info.num_classes;
  if (info.text) {
    const LanguageModelInput input =
        language_model_input(config_.context, nn::resolve_model_description(config_.model), config_.model, *dataset_);
    context_ = input.context;
    sample = {input.context};
    classes = input.vocab;
  }
  graph_.emplace(nn::build_graph(config_.model, sample, classes, device_, config_.fusion == Toggle::kOn));
  // auto: where the reduce-scatter and all-gather go straight between shared buffers (over MPI the
  // all-gather costs more than the half optimizer step saves: docs/benchmarks.md).
  sharded_ = world_ > 1 && (config_.shard_optimizer == Toggle::kOn ||
                            (config_.shard_optimizer == Toggle::kAuto && shares_buffers()));
}

// --init-from's file, and without --model the model it holds (its description; the banner names its --model).
void Trainer::take_init_checkpoint() {
  std::ostringstream warnings;
  init_path_ = resolve_checkpoint(config_.init_from, false, warnings);
  if (out_) *out_ << warnings.str();
  model_label_ = config_.model;
  if (!config_.model.empty()) return;
  CheckpointState state = read_checkpoint(init_path_, CheckpointParts::kModel);
  config_.model = state.model_description;
  // An imported or fine-tuned checkpoint's --model is its description's JSON: the banner names the file only.
  const bool named = !state.model_spec.empty() && state.model_spec.front() != '{';
  model_label_ = (named ? state.model_spec + " " : std::string()) + "(the model of " + init_path_ + ")";
  if (rank_ == 0) init_state_ = std::move(state);  // restore_state() takes the weights from it, without reading again
}

bool Trainer::shares_buffers() const {
  return device_.is_cpu() && world_ > 1 && ctx_.gradients->backend().shares_allocated_buffers;
}

void* Trainer::shared_memory(coll::SharedBuffer& slot, std::size_t bytes) {
  try {
    slot = ctx_.gradients->allocate_shared(bytes);
    return slot.data();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kIo) throw;
    shared_memory_failed_ = e.message();
    return nullptr;
  }
}

void Trainer::setup_model_and_optimizer() {
  // Where the gradient communicator's collectives read and write shared buffers directly (the shared-memory
  // transport), the model's gradients (and, with a sharded optimizer, its parameters) are built in such buffers,
  // allocated by every rank in the same order. A /dev/shm too small for them (64 MiB in a default Docker
  // container) only costs speed: the failure is the same on every rank, and the model keeps ordinary memory.
  // 16-bit gradients are reduced in their own buffer (GradWire): that one is shared instead.
  nn::ModelMemory memory;
  if (shares_buffers()) {
    auto floats = [this](coll::SharedBuffer& slot, std::int64_t n) {
      return static_cast<float*>(shared_memory(slot, static_cast<std::size_t>(n) * sizeof(float)));
    };
    if (sharded_) memory.parameters = [this, floats](std::int64_t n) { return floats(param_memory_, n); };
    if (config_.grad_dtype == GradDtype::kFp32)
      memory.gradients = [this, floats](std::int64_t n) { return floats(grad_memory_, n); };
  }
  model_ = std::make_unique<nn::Model>(std::move(*graph_), memory);
  graph_.reset();
  if (shares_buffers() && config_.grad_dtype != GradDtype::kFp32)
    shared_memory(wire_memory_, static_cast<std::size_t>(model_->num_parameters()) * sizeof(std::uint16_t));
  check_dataset_fits(*model_, *dataset_);
  optimizer_ = nn::Optimizer::create(optimizer_options(config_), model_->num_parameters(), device_);
  if (!config_.decay_bn_and_bias) optimizer_->set_decay_exempt(nn::decay_exempt_ranges(model_->parameters()));
}

void Trainer::setup_data() {
  const data::DatasetInfo& info = dataset_->info();
  data::SamplerOptions sampler{config_.seed, world_, rank_, config_.batch_size,
                               info.text ? data::window_count(info.train_size, context_) : info.train_size};
  data::LoaderOptions loader_options;
  loader_options.split = "train";
  loader_options.context = context_;
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
                                           << world_ * config_.batch_size * accum_ << (info.text ? " windows" : " samples")
                                           << ", but the train split of " << dataset_->describe() << " has "
                                           << loader_->sampler()->options().dataset_size
                                           << (info.text ? " windows of " + std::to_string(context_ + 1) + " tokens" : ""));
  // The schedule spans all epochs (or --train-steps); --max-steps only stops early (so a run cut short and
  // resumed, or one stopped by --max-steps, follows the same learning rates as the full run).
  if (config_.train_steps > 0) config_.epochs = (config_.train_steps + steps_per_epoch_ - 1) / steps_per_epoch_;
  total_steps_ = config_.train_steps > 0 ? config_.train_steps : steps_per_epoch_ * config_.epochs;
  schedule_.emplace(make_schedule(config_, total_steps_, steps_per_epoch_));
}

void Trainer::restore_state() {
  init_and_broadcast_parameters(*model_, config_.seed, control_);
  resumed_ = resume_from_checkpoint(config_, *model_, *optimizer_, pos_, control_, summary_.last_checkpoint, out_);
  if (!resumed_ && !init_path_.empty())
    init_from_checkpoint(init_path_, *model_, control_, init_state_ ? &*init_state_ : nullptr);
  init_state_.reset();
  // fp16's loss scale goes on from the checkpoint's (one written without fp16 starts from --loss-scale).
  if (config_.grad_dtype == GradDtype::kFp16) {
    scaler_ = LossScaler(config_.loss_scale, config_.loss_scale_growth_interval);
    if (resumed_ && pos_.loss_scale > 0.0) scaler_.restore(pos_.loss_scale, pos_.loss_scale_good_steps);
  }
  last_checkpoint_step_ = resumed_ ? pos_.step : -1;
}

void Trainer::setup_gradient_sync() {
  std::vector<GradSlice> slices;
  for (const nn::ParamInfo& p : model_->parameters())
    slices.push_back({static_cast<std::size_t>(p.offset), static_cast<std::size_t>(p.numel)});
  bucketer_ = std::make_unique<GradientBucketer>(*ctx_.gradients, model_->grads(), slices,
                                                 static_cast<std::size_t>(config_.bucket_mb * 1024 * 1024),
                                                 config_.overlap, sharded_,
                                                 GradWire{wire_type(config_.grad_dtype), wire_memory_.as<std::uint16_t>(), device_});
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

void Trainer::setup_step_and_epoch() {
  std::vector<nn::Optimizer::Range> owned;
  for (const auto& [begin, end] : bucketer_->owned_ranges())
    owned.push_back({static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end)});
  nn::ReplicaReducer* reducer = world_ > 1 && config_.sync_bn ? &reducer_ : nullptr;
  engine_ = std::make_unique<StepEngine>(StepParts{*model_, *optimizer_, *bucketer_, *loader_, control_, reducer,
                                                   telemetry_->timeline(), scaler_, ctx_.stop_requested},
                                         config_.seed, accum_, std::move(owned), config_.grad_clip);
  reporter_ = std::make_unique<EpochReporter>(config_, *model_, *dataset_, control_, *ctx_.gradients, *telemetry_, out_,
                                              ctx_.stop_requested);
  reporter_->start_interval(pos_);
  if (rank_ == 0) reporter_->best().replay(pos_.metrics_jsonl);  // rank 0 judges; the checkpoint's metrics hold the state
}

void Trainer::print_banner() const {
  if (!out_) return;
  const data::DatasetInfo& info = dataset_->info();
  std::ostream& o = *out_;
  o << "mirror trainer: " << world_ << " rank" << (world_ > 1 ? "s" : "") << " on " << to_string(device_)
    << (device_.is_cpu() ? " (" + nn::cpu_kernels_description() + " per rank)" : "") << ", " << precision_text()
    << ", gradients over " << coll::to_string(ctx_.gradients->backend().buffers) << " ("
    << coll::transport_name(*ctx_.gradients)
    << (grad_memory_.data() || wire_memory_.data() ? ", in a shared buffer" : "") << ") as "
    << grad_dtype_text() << (sharded_ ? ", optimizer sharded over " + std::to_string(world_) + " ranks" : "") << "\n";
  o << "  " << coll::MpiRuntime::hosts_summary() << "\n";
  if (!shared_memory_failed_.empty())
    o << "  warning: " << (grad_memory_.data() || wire_memory_.data() ? "parameters" : "gradients")
      << " in ordinary memory (slower collectives): " << shared_memory_failed_ << "\n";
  if (info.text)
    o << "  data " << config_.data << ": " << info.train_size << " train and " << info.test_size << " test tokens ("
      << info.tokenizer << ", vocabulary " << info.vocab_size << "), windows of " << context_ << " tokens\n";
  else
    o << "  data " << config_.data << ": " << info.train_size << " train, " << info.test_size << " test, "
      << info.features << " features, " << info.num_classes << " classes\n";
  o
    << "  model " << (model_label_.empty() ? config_.model : model_label_) << ": " << model_->num_parameters() << " parameters ("
    << model_->num_parameters() * 4 / 1024 << " KiB), " << bucketer_->bucket_count() << " gradient bucket(s)\n"
    << nn::layer_table(*model_)
    << "  batch " << config_.batch_size << " per rank, global " << config_.global_batch_size
    << (accum_ > 1 ? " x " + std::to_string(accum_) + " accumulation steps" : "") << "; " << steps_per_epoch_
    << " steps per epoch, "
    << (config_.train_steps > 0 ? std::to_string(config_.train_steps) + " steps" : std::to_string(config_.epochs) + " epochs")
    << ", lr "
    << schedule_->lr_at(std::min<std::int64_t>(pos_.step, total_steps_ - 1)) << "\n";
  if (config_.weight_decay > 0) o << "  " << weight_decay_line() << "\n";
  if (config_.grad_clip > 0) o << "  gradient norm clipped to " << config_.grad_clip << "\n";
  if (!resumed_ && !init_path_.empty())
    o << "  initialised from " << init_path_ << " (its weights and buffers; a fresh optimizer and schedule)\n";
  if (resumed_)
    o << "  resumed from " << summary_.last_checkpoint << " at step " << pos_.step << " (epoch " << pos_.epoch + 1
      << ", micro-batch " << pos_.micro << ")\n";
  o.flush();
}

// "weight decay 0.01 on 93120 of 93284 parameters (normalisation weight/bias and biases exempt)".
std::string Trainer::weight_decay_line() const {
  std::int64_t exempt = 0;
  for (const auto& r : optimizer_->decay_exempt()) exempt += r.end - r.begin;
  std::ostringstream o;
  o << "weight decay " << config_.weight_decay << " on " << model_->num_parameters() - exempt << " of "
    << model_->num_parameters() << " parameters"
    << (config_.decay_bn_and_bias ? " (--decay-bn-and-bias)" : " (normalisation weight/bias and biases exempt)");
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
  bar_ = std::make_unique<ProgressBar>(out_, config_.progress == Toggle::kOn);  // auto: decided by the caller
}

// "compute fp32", or "compute bf16 (brg:avx512_core_bf16)": the kernel oneDNN runs bfloat16 products with.
std::string Trainer::precision_text() const {
  if (config_.precision == nn::Precision::kFloat32) return "compute fp32";
  return "compute bf16 (" + (device_.is_cuda() ? std::string("cuBLAS") : nn::cpu_bf16_kernel()) + ")";
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

}  // namespace mirror::train
