// step_engine.cc — step_engine.h: micro-batches, the gradient wait, the agreement, the optimizer step.
#include "step_engine.h"

#include <chrono>
#include <cmath>

#include "batch_tensor.h"
#include "mirror/error.h"
#include "mirror/nn/finite.h"
#include "mirror/nn/grad_norm.h"
#include "mirror/nn/ops.h"

namespace mirror::train {
namespace {

using Clock = std::chrono::steady_clock;
using telemetry::Timeline;

}  // namespace

StepEngine::StepEngine(StepParts parts, std::uint64_t seed, std::int64_t accum,
                       std::vector<nn::Optimizer::Range> owned, double grad_clip)
    : parts_(parts), seed_(seed), accum_(accum), owned_(std::move(owned)), grad_clip_(grad_clip),
      loss_(parts.model.device()), gradient_over_logits_(parts.model.logits_may_hold_their_gradient()) {}

StepOutcome StepEngine::step(RunPosition& pos, EpochTimes& times, float lr) {
  Timeline& timeline = parts_.timeline;
  timeline.begin_step(pos.step + 1);  // steps counted from 1, as TensorBoard's
  const double loss_before = pos.loss_sum;
  parts_.bucketer.set_scale(static_cast<float>(parts_.scaler.scale()));
  for (std::int64_t k = 0; k < accum_; ++k) micro_step(k, pos, times);
  {
    const Timeline::Scope span(timeline, "gradient wait", "communication");
    parts_.bucketer.finish();
  }
  times.comm_wait += parts_.bucketer.last_wait_seconds();
  // Collective. A non-finite step goes no further; an fp16 overflow is skipped (the parameters stay as they are
  // on every rank, the schedule and the data move on).
  StepOutcome outcome = agree(pos.loss_sum - loss_before);
  if (!outcome.non_finite.empty()) return outcome;
  ++times.steps;
  if (outcome.overflowed) ++times.skipped;
  const auto optimizer_start = Clock::now();
  if (!outcome.overflowed) {
    const Timeline::Scope span(timeline, "optimizer", "optimizer");
    if (grad_clip_ > 0.0) times.grad_norm = clip_gradients();
    parts_.optimizer.step(parts_.model.params(), parts_.model.grads(), lr, owned_);
    parts_.scaler.on_good_step();
  }
  const auto gather_start = Clock::now();
  if (!outcome.overflowed && parts_.bucketer.sharded()) {
    const Timeline::Scope span(timeline, "all-gather", "communication");
    parts_.bucketer.gather(parts_.model.params());
  }
  times.optimizer += std::chrono::duration<double>(gather_start - optimizer_start).count();
  times.gather += std::chrono::duration<double>(Clock::now() - gather_start).count();
  pos.step += 1;
  if (times.steps == EpochTimes::kSteadySkipSteps) {
    times.steady_start = Clock::now();
    times.trained_before_steady = times.trained;
  }
  return outcome;
}

void StepEngine::micro_step(std::int64_t k, RunPosition& pos, EpochTimes& times) {
  Timeline& timeline = parts_.timeline;
  const std::int64_t wait_start = telemetry::now_ns();
  MIRROR_CHECK(parts_.loader.next(batch_), kInternal, "loader ended early at micro-batch " << pos.micro);
  timeline.add("data wait", "data", wait_start, telemetry::now_ns());
  times.data_wait += batch_.wait_seconds;
  const std::int64_t forward_start = telemetry::now_ns();
  const nn::Tensor input = batch_tensor(batch_, parts_.model, staging_);
  nn::ForwardContext context;
  context.seed = seed_;
  context.step = pos.step;
  context.sample_ids = batch_.indices;
  context.reducer = parts_.reducer;
  const nn::Tensor& logits = parts_.model.forward(input, context);
  if (gradient_over_logits_)  // the loss writes its gradient over the logits (nn::Model says when it may)
    dlogits_ = nn::Tensor::view(const_cast<float*>(logits.data()), logits.shape(), logits.device());
  // The mean over every target of the step (a sample's label, or a window's tokens) on this rank.
  const auto targets = static_cast<std::int64_t>(batch_.y.size());
  const nn::LossStats stats = loss_.forward_backward(logits, batch_.y, dlogits_, targets * accum_);
  timeline.add("forward", "compute", forward_start, telemetry::now_ns());  // with the loss
  pos.loss_sum += stats.loss_sum;
  pos.correct += stats.correct;
  pos.samples += stats.count;
  times.trained += stats.count;
  parts_.bucketer.begin_step(k == accum_ - 1);
  const std::int64_t backward_start = telemetry::now_ns();
  parts_.model.backward(dlogits_, k == 0 ? nn::GradMode::kOverwrite : nn::GradMode::kAccumulate,
                        [this](std::size_t i) { parts_.bucketer.on_grad_ready(i); });
  timeline.add("backward", "compute", backward_start, telemetry::now_ns());
  pos.micro += 1;
}

// One small all-reduce per step carries both verdicts every rank must share: a stop request (SIGTERM on any
// rank stops all after this step) and whether this step's loss (per rank) or its averaged gradients (this
// rank's owned ranges: all of them, or its shard) hold a NaN or Inf. The gradient test is one pass over the
// reduced gradients (docs/training.md measures it).
StepOutcome StepEngine::agree(double step_loss) {
  std::int64_t bad_grads = 0;
  const nn::Device& device = parts_.model.device();
  for (const nn::Optimizer::Range& r : owned_)
    bad_grads += nn::count_non_finite(device, parts_.model.grads() + r.begin, r.end - r.begin);
  std::int32_t flags[3] = {parts_.stop_requested && parts_.stop_requested->load() ? 1 : 0,
                           std::isfinite(step_loss) ? 0 : 1, bad_grads > 0 ? 1 : 0};
  parts_.control.allreduce(flags, flags, 3, coll::DataType::kInt32, coll::ReduceOp::kMax);
  StepOutcome outcome;
  outcome.stop = flags[0] != 0;
  if (flags[1] == 0 && flags[2] == 0) return outcome;
  if (flags[1] == 0 && parts_.scaler.can_skip()) {
    outcome.overflowed = true;
    return outcome;
  }
  outcome.non_finite = std::string(flags[1] ? "the loss" : "") + (flags[1] && flags[2] ? " and " : "") +
                       (flags[2] ? "the averaged gradients" : "");
  return outcome;
}

double StepEngine::clip_gradients() {
  const nn::Device& device = parts_.model.device();
  float* grads = parts_.model.grads();
  double squares = 0.0;
  for (const nn::Optimizer::Range& r : owned_) squares += nn::sum_of_squares(device, grads + r.begin, r.end - r.begin);
  if (parts_.bucketer.sharded())
    parts_.control.allreduce(&squares, &squares, 1, coll::DataType::kFloat64, coll::ReduceOp::kSum);
  const double norm = std::sqrt(squares);
  const double factor = grad_clip_ / (norm + 1e-6);
  if (factor < 1.0)
    for (const nn::Optimizer::Range& r : owned_)
      nn::ops::scale(device, grads + r.begin, r.end - r.begin, static_cast<float>(factor));
  return norm;
}

}  // namespace mirror::train
