// trainer.cc — trainer.h's run: epochs of steps (the step engine), each ended by the epoch reporter, the
// position in the run kept across both, rank-0 checkpoints (atomic; reduced epoch sums and gathered optimizer
// state in them) and the ways a run stops (--max-steps, a stop request, early stopping, divergence).
#include "trainer.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <ostream>

#include "mirror/agreed_error.h"
#include "mirror/error.h"
#include "mirror/nn/device.h"
#include "mirror/nn/finite.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/text_tokens.h"

namespace mirror::train {
namespace {

using Clock = std::chrono::steady_clock;
using telemetry::Timeline;

}  // namespace

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
  bool trained_out = false;  // --train-steps reached: this epoch's line is the end of training
  while (pos_.micro + accum_ <= micro_per_epoch()) {
    if (config_.train_steps > 0 && pos_.step >= config_.train_steps) {
      trained_out = true;
      break;
    }
    if (config_.max_steps > 0 && pos_.step >= config_.max_steps) {
      stop = true;
      break;
    }
    train_step(times);
    if (!stop_agreed_) report_inside_epoch(times);
    if (stop_agreed_) {
      stop = true;
      if (!early_stopped_) summary_.stopped_early = true;  // a stop request, not --early-stop
      break;
    }
    if (config_.checkpoint_every_steps > 0 && pos_.step % config_.checkpoint_every_steps == 0) save_checkpoint();
  }
  nn::synchronize(device_);
  times.train = std::chrono::duration<double>(Clock::now() - times.start).count();
  if (stop && pos_.micro < micro_per_epoch()) return EpochEnd::kStoppedInside;  // a partial epoch: no epoch line
  end_epoch(times);
  return stop || trained_out || early_stopped_ || stop_agreed_ ? EpochEnd::kStoppedAtEnd : EpochEnd::kCompleted;
}

// A language model's evaluation every --eval-every-steps steps inside an epoch (not at the epoch's last step
// nor at the end of training, which have lines of their own); the next interval starts after it.
void Trainer::report_inside_epoch(EpochTimes& times) {
  const std::int64_t every = config_.eval_every_steps;
  if (context_ == 0 || every <= 0 || pos_.step % every != 0) return;
  if (pos_.micro + accum_ > micro_per_epoch()) return;
  if (config_.train_steps > 0 && pos_.step >= config_.train_steps) return;
  nn::synchronize(device_);
  times.train = std::chrono::duration<double>(Clock::now() - times.start).count();
  bar_->clear();
  const double lr = schedule_->lr_at(std::max<std::int64_t>(pos_.step - 1, 0));
  const EpochVerdict verdict = reporter_->report_inside_epoch(times, pos_, lr, scaler_);  // collective
  if (verdict.abandoned) abandon_for_stop();
  if (verdict.evaluated) {
    summary_.test_loss = verdict.test_loss;
    summary_.test_acc = verdict.test_acc;
  }
  if (verdict.improved && !config_.checkpoint_dir.empty()) {
    save_checkpoint();
    if (rank_ == 0) keep_as_best(summary_.last_checkpoint, config_.checkpoint_dir);
  }
  if (verdict.stop) {
    announce_early_stop();
    stop_agreed_ = true;  // inside an epoch the run stops after this step, as for a stop request
  }
  times = EpochTimes{};
  times.start = Clock::now();
}

void Trainer::announce_early_stop() {
  early_stopped_ = true;
  const BestTracker& best = reporter_->best();
  if (out_)
    *out_ << "early stop: " << best.key() << " has not improved by more than " << config_.min_delta << " for "
          << best.since_best() << " evaluation(s); best " << best.best() << " at step " << best.best_step() << "\n";
}

void Trainer::train_step(EpochTimes& times) {
  const double loss_before = pos_.loss_sum;
  const std::int64_t samples_before = pos_.samples;
  const float lr = schedule_->lr_at(pos_.step);
  const StepOutcome outcome = engine_->step(pos_, times, lr);
  stop_agreed_ = outcome.stop;
  if (!outcome.non_finite.empty()) {
    bar_->clear();
    throw_diverged(pos_.step + 1, outcome.non_finite + " turned non-finite (NaN or Inf); the step was not applied");
  }
  if (outcome.overflowed) skip_overflowed_step();
  telemetry_->after_step(pos_.step, pos_.loss_sum - loss_before, pos_.samples - samples_before, lr);
  bar_->update(pos_.epoch + 1, config_.epochs, pos_.micro / accum_, steps_per_epoch_,
               pos_.samples ? pos_.loss_sum / static_cast<double>(pos_.samples) : 0.0);
}

// fp16: the reduced gradients of the step just counted overflowed float16 at this loss scale (every rank saw the
// same verdict).
void Trainer::skip_overflowed_step() {
  if (out_) {
    bar_->clear();
    *out_ << "warning: step " << pos_.step << " (epoch " << pos_.epoch + 1
          << "): float16 gradients overflowed at loss scale " << static_cast<long long>(scaler_.scale())
          << "; step skipped, loss scale now " << static_cast<long long>(scaler_.scale() / 2) << "\n";
    out_->flush();
  }
  scaler_.on_overflow();
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

void Trainer::end_epoch(const EpochTimes& times) {
  bar_->clear();
  const double lr = schedule_->lr_at(std::max<std::int64_t>(pos_.step - 1, 0));
  const EpochVerdict verdict = reporter_->report(times, pos_, lr, scaler_);  // collective
  if (verdict.abandoned) abandon_for_stop();
  if (verdict.evaluated) {
    summary_.test_loss = verdict.test_loss;
    summary_.test_acc = verdict.test_acc;
  }
  summary_.epoch = pos_.epoch + 1;
  pos_.loss_sum = 0.0;
  pos_.correct = pos_.samples = 0;
  pos_.micro = micro_per_epoch();  // the epoch's position is its end until the loop moves on
  const bool keep_best = verdict.improved && !config_.checkpoint_dir.empty();
  if (config_.checkpoint_every_steps == 0 || keep_best) save_epoch_checkpoint();
  if (keep_best && rank_ == 0) keep_as_best(summary_.last_checkpoint, config_.checkpoint_dir);
  if (verdict.stop) announce_early_stop();
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
  double sums[3] = {pos_.loss_sum, static_cast<double>(pos_.correct), static_cast<double>(pos_.samples)};
  control_.allreduce(sums, sums, 3, coll::DataType::kFloat64, coll::ReduceOp::kSum);
  // A sharded optimizer's state is current only in each rank's own ranges: gather it first.
  for (std::size_t i = 0; i < optimizer_->state_names().size(); ++i) bucketer_->gather(optimizer_->state_data(i));
  reporter_->agree_on_buffers();
  // Never a checkpoint of broken parameters (finite gradients can still overflow them): every rank holds
  // all of them after the gathers, and the ranks agree on the verdict.
  std::int32_t bad = nn::count_non_finite(device_, model_->params(), model_->num_parameters()) > 0 ? 1 : 0;
  control_.allreduce(&bad, &bad, 1, coll::DataType::kInt32, coll::ReduceOp::kMax);
  if (bad) throw_diverged(pos_.step, "the parameters it produced are not finite (NaN or Inf) and were not saved");
  if (rank_ == 0) {
    RunPosition saved = pos_;
    saved.loss_sum = sums[0];
    saved.correct = static_cast<std::int64_t>(sums[1]);
    saved.samples = static_cast<std::int64_t>(sums[2]);
    saved.loss_scale = scaler_.enabled() ? scaler_.scale() : 0.0;
    saved.loss_scale_good_steps = scaler_.enabled() ? scaler_.good_steps() : 0;
    summary_.last_checkpoint =
        write_checkpoint(config_.checkpoint_dir,
                         capture_state(*model_, *optimizer_, saved, config_, world_, dataset_->info().tokenizer,
                                       dataset_tokenizer_files(*dataset_)));
    prune_checkpoints(config_.checkpoint_dir, config_.keep);
  }
  last_checkpoint_step_ = pos_.step;
}

TrainSummary train(const TrainConfig& config, const TrainContext& context) {
  MIRROR_CHECK(context.control && context.gradients, kInternal, "train() needs its communicators");
  Trainer trainer(config, context);
  return trainer.run();
}

}  // namespace mirror::train
