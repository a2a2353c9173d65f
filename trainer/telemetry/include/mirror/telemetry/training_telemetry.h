// mirror/telemetry/training_telemetry.h — what one training run writes for TensorBoard and the timeline,
// behind the few calls the training loop makes (every rank makes them, in the same order):
//
//   TrainingTelemetry telemetry(options, control, resumed_step);   // collective: clock offsets, event file
//   per step:  telemetry.timeline().begin_step(step); ...spans...; telemetry.after_step(step, loss_sum, n, lr);
//   per epoch: telemetry.epoch(step, {{"epoch/train_loss", v}, ...});
//   at the end: telemetry.finish();                                 // collective: the merged timeline
//
// TensorBoard (rank 0 writes `tensorboard_dir`): every `tensorboard_every` steps, train/loss (the mean loss
// over all ranks' samples of the steps since the last write: one 2-double all-reduce over the control
// communicator every K steps) and train/lr; per epoch the scalars given, keyed by the global step, then a
// flush. A resumed run's writer starts after `resumed_step - 1`: the per-tag check of the existing files
// (tensorboard_writer.h) drops whatever the interrupted run already wrote, and an epoch line at exactly the
// resumed step (a checkpoint taken at an epoch's end before its line) is still written when it is missing.
// Timeline (`timeline_path`): spans of the steps in `timeline_steps`, offsets measured here, merged by
// finish() into one Chrome trace file written by rank 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/telemetry/clock_offset.h"
#include "mirror/telemetry/tensorboard_writer.h"
#include "mirror/telemetry/timeline.h"

namespace mirror::telemetry {

struct TrainingTelemetryOptions {
  std::string tensorboard_dir;           // "" : no event file
  std::int64_t tensorboard_every = 10;   // steps between train/loss and train/lr scalars
  std::string timeline_path;             // "" : no timeline
  TimelineWindow timeline_steps{5, 24};  // --timeline-steps A:B
};

class TrainingTelemetry {
 public:
  // Collective over `control` (a host-backend communicator). Throws kInvalidArgument for
  // tensorboard_every < 1 or an empty window with a timeline path.
  TrainingTelemetry(const TrainingTelemetryOptions& options, coll::Communicator& control, std::int64_t resumed_step);
  ~TrainingTelemetry();

  Timeline& timeline() { return timeline_; }
  bool tensorboard() const { return !options_.tensorboard_dir.empty(); }
  const std::string& event_file() const;  // rank 0's event file ("" elsewhere or without TensorBoard)

  // After the optimizer step that made the global step count `step`: this rank's loss sum and samples of
  // it, and the learning rate it used. Collective every tensorboard_every steps.
  void after_step(std::int64_t step, double loss_sum, std::int64_t samples, double lr);
  // Rank 0: the epoch's scalars at the global step, then a flush (other ranks: nothing).
  void epoch(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  // Collective: writes the merged timeline (when asked for) and flushes the event file.
  void finish();

 private:
  TrainingTelemetryOptions options_;
  coll::Communicator& control_;
  std::unique_ptr<TensorBoardWriter> writer_;  // rank 0 with TensorBoard only
  Timeline timeline_;
  ClockOffsets offsets_;
  double loss_sum_ = 0.0;
  std::int64_t samples_ = 0;
};

}  // namespace mirror::telemetry
