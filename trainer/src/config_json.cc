// config_json.cc — the trainer configuration checked as a whole (validate: what depends on several flags or on
// the world size) and written as JSON (to_json, for checkpoints), and the enum flags' names (to_string).
#include <nlohmann/json.hpp>

#include <cmath>

#include "mirror/error.h"
#include "mirror/train/cli_checks.h"
#include "mirror/train/config.h"
#include "config_tables.h"

namespace mirror::train {

using namespace detail;  // config_tables.h

std::string to_string(Toggle value) { return cli::enum_name(kToggles, value); }
std::string to_string(BackendChoice value) { return cli::enum_name(kBackends, value); }
std::string to_string(LrScaling value) { return cli::enum_name(kScalings, value); }
std::string to_string(GradDtype value) { return cli::enum_name(kGradDtypes, value); }
std::string decay_flag_name(nn::DecayKind kind) { return cli::enum_name(kDecays, kind); }

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
  MIRROR_CHECK(!(c.resume.kind == ResumeFrom::Kind::kLatest && c.checkpoint_dir.empty()), kInvalidArgument,
               "--resume auto needs --checkpoint-dir to look in");
  MIRROR_CHECK(!(c.decay == nn::DecayKind::kStep && c.decay_step_size <= 0), kInvalidArgument,
               "--decay step needs --decay-step-size > 0");
  MIRROR_CHECK(c.lr_milestones.empty() || c.decay == nn::DecayKind::kConstant, kInvalidArgument,
               "--lr-milestones is a schedule of its own; drop --decay " << decay_flag_name(c.decay)
                                                                         << " or the milestones");
  MIRROR_CHECK(c.lr_milestones.empty() || c.gamma > 0.0, kInvalidArgument, "--lr-milestones needs --gamma > 0");
  if (c.model.empty() && c.init_from.empty()) c.model = "mlp:512,256";
  if (c.early_stop > 0 && c.keep_best == BestMetric::kNone) c.keep_best = BestMetric::kTestLoss;
  MIRROR_CHECK(c.keep_best == BestMetric::kNone || c.early_stop > 0 || !c.checkpoint_dir.empty(), kInvalidArgument,
               "--keep-best needs --checkpoint-dir to keep best.h5 in");
  MIRROR_CHECK(!(c.eval_every == 0 && (c.keep_best == BestMetric::kTestAcc || c.keep_best == BestMetric::kTestLoss)),
               kInvalidArgument, "--keep-best/--early-stop by a test metric needs evaluations; drop --eval-every 0");
  MIRROR_CHECK(c.min_lr <= c.lr, kInvalidArgument, "--min-lr " << c.min_lr << " is above --lr " << c.lr);
  MIRROR_CHECK(c.grad_dtype == GradDtype::kFp16 || (c.loss_scale == 0.0 && c.loss_scale_growth_interval == 2000),
               kInvalidArgument,
               "--loss-scale and --loss-scale-growth-interval apply to --grad-dtype fp16 only (got --grad-dtype "
                   << to_string(c.grad_dtype) << ")");
  if (c.grad_dtype == GradDtype::kFp16 && c.loss_scale == 0.0) c.loss_scale = 65536.0;
  MIRROR_CHECK(c.eval_batches == 0 || c.eval_every_steps > 0, kInvalidArgument,
               "--eval-batches limits the evaluations of --eval-every-steps; give --eval-every-steps N too");
  if (c.optimizer == nn::OptimizerKind::kAdamW)
    MIRROR_CHECK(c.beta1 < 1.0 && c.beta2 < 1.0, kInvalidArgument, "--beta1 and --beta2 must be below 1");
}

std::string to_json(const TrainConfig& c) {
  nlohmann::ordered_json j;
  j["data"] = c.data;
  j["sharding"] = cli::enum_name(kShardings, c.sharding);
  j["in_memory"] = c.in_memory;
  j["prefetch"] = c.prefetch;
  j["random_crop"] = c.random_crop;
  j["hflip"] = c.hflip;
  j["model"] = c.model;
  j["init_from"] = c.init_from;
  j["device"] = cli::enum_name(kDevices, c.device);
  j["blas_threads"] = c.blas_threads;
  j["conv_algorithm"] = cli::enum_name(kConvAlgorithms, c.conv_algorithm);
  j["precision"] = cli::enum_name(kPrecisions, c.precision);
  j["fusion"] = cli::enum_name(kOnOff, c.fusion);
  j["seed"] = c.seed;
  j["sync_bn"] = c.sync_bn;
  j["epochs"] = c.epochs;
  j["max_steps"] = c.max_steps;
  j["train_steps"] = c.train_steps;
  j["context"] = c.context;
  j["batch_size"] = c.batch_size;
  j["global_batch_size"] = c.global_batch_size;
  j["accum_steps"] = c.accum_steps;
  j["optimizer"] = cli::enum_name(kOptimizers, c.optimizer);
  j["lr"] = c.lr;
  j["momentum"] = c.momentum;
  j["nesterov"] = c.nesterov;
  j["weight_decay"] = c.weight_decay;
  j["decay_bn_and_bias"] = c.decay_bn_and_bias;
  j["beta1"] = c.beta1;
  j["beta2"] = c.beta2;
  j["eps"] = c.eps;
  j["grad_clip"] = c.grad_clip;
  j["warmup_steps"] = c.warmup_steps;
  j["decay"] = cli::enum_name(kDecays, c.decay);
  j["decay_step_size"] = c.decay_step_size;
  j["gamma"] = c.gamma;
  j["lr_milestones"] = c.lr_milestones;
  j["min_lr"] = c.min_lr;
  j["scale_lr"] = cli::enum_name(kScalings, c.scale_lr);
  j["reference_batch"] = c.reference_batch;
  j["bucket_mb"] = c.bucket_mb;
  j["overlap"] = c.overlap;
  j["backend"] = cli::enum_name(kBackends, c.backend);
  j["host_transport"] = c.host_transport ? c.host_transport->name : "auto";
  j["check_collectives"] = c.check_collectives;
  j["shard_optimizer"] = cli::enum_name(kToggles, c.shard_optimizer);
  j["grad_dtype"] = cli::enum_name(kGradDtypes, c.grad_dtype);
  j["loss_scale"] = c.loss_scale;
  j["loss_scale_growth_interval"] = c.loss_scale_growth_interval;
  j["timeout_s"] = c.timeout_s;
  j["checkpoint_dir"] = c.checkpoint_dir;
  j["checkpoint_every"] = c.checkpoint_every_steps > 0 ? nlohmann::ordered_json(std::to_string(c.checkpoint_every_steps))
                                                       : nlohmann::ordered_json("epoch");
  j["keep"] = c.keep;
  j["keep_best"] = cli::enum_name(kBestMetrics, c.keep_best);
  j["early_stop"] = c.early_stop;
  j["min_delta"] = c.min_delta;
  j["resume"] = c.resume.kind == ResumeFrom::Kind::kLatest ? "auto" : c.resume.path;
  j["eval_every"] = c.eval_every;
  j["eval_every_steps"] = c.eval_every_steps;
  j["eval_batches"] = c.eval_batches;
  j["metrics"] = c.metrics;
  j["tensorboard"] = c.tensorboard;
  j["tensorboard_every"] = c.tensorboard_every;
  j["timeline"] = c.timeline;
  j["timeline_steps"] = std::to_string(c.timeline_steps.first) + ":" + std::to_string(c.timeline_steps.last);
  return j.dump();
}

}  // namespace mirror::train
