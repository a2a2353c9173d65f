// training_telemetry.cc — the training loop's TensorBoard scalars and timeline, in one object.
#include "mirror/telemetry/training_telemetry.h"

#include "mirror/error.h"
#include "mirror/telemetry/timeline_merge.h"

namespace mirror::telemetry {

TrainingTelemetry::TrainingTelemetry(const TrainingTelemetryOptions& options, coll::Communicator& control,
                                     std::int64_t resumed_step)
    : options_(options),
      control_(control),
      timeline_(options.timeline_path.empty() ? TimelineWindow{} : options.timeline_steps) {
  MIRROR_CHECK(options.tensorboard_every >= 1, kInvalidArgument,
               "--tensorboard-every must be a positive number of steps, got " << options.tensorboard_every);
  if (!options.timeline_path.empty()) {
    MIRROR_CHECK(!options.timeline_steps.empty(), kInvalidArgument, "--timeline needs a window of steps");
    offsets_ = measure_clock_offsets(control);
  }
  if (tensorboard() && control.rank() == 0)
    writer_ = std::make_unique<TensorBoardWriter>(TensorBoardOptions{options.tensorboard_dir, resumed_step - 1});
}

TrainingTelemetry::~TrainingTelemetry() = default;

const std::string& TrainingTelemetry::event_file() const {
  static const std::string none;
  return writer_ ? writer_->path() : none;
}

void TrainingTelemetry::after_step(std::int64_t step, double loss_sum, std::int64_t samples, double lr) {
  if (!tensorboard()) return;
  loss_sum_ += loss_sum;
  samples_ += samples;
  if (step % options_.tensorboard_every != 0) return;
  double sums[2] = {loss_sum_, static_cast<double>(samples_)};
  control_.allreduce(sums, sums, 2, coll::DataType::kFloat64, coll::ReduceOp::kSum);
  loss_sum_ = 0.0;
  samples_ = 0;
  if (!writer_) return;
  if (sums[1] > 0) writer_->add_scalar("train/loss", step, static_cast<float>(sums[0] / sums[1]));
  writer_->add_scalar("train/lr", step, static_cast<float>(lr));
}

void TrainingTelemetry::epoch(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  if (!writer_) return;
  for (const auto& [tag, value] : scalars) writer_->add_scalar(tag, step, static_cast<float>(value));
  writer_->flush();
}

void TrainingTelemetry::finish() {
  if (writer_) writer_->flush();
  if (!options_.timeline_path.empty()) write_merged_timeline(timeline_, offsets_, control_, options_.timeline_path);
}

}  // namespace mirror::telemetry
