// trainer.h — the data-parallel training run as a class: set up (dataset, the model's graph, the model built
// into its memory, optimizer, initial state, gradient bucketer, telemetry), print the banner, then run the
// epochs: the step engine makes every optimizer step (step_engine.h), the epoch reporter ends every epoch
// (epoch_reporter.h), and the trainer keeps the position, the checkpoints and the stopping. train()
// (mirror/train/training.h) is a thin function over it. Private to trainer/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/data/dataset.h"
#include "mirror/data/loader.h"
#include "mirror/nn/model.h"
#include "mirror/nn/optimizer.h"
#include "mirror/nn/schedule.h"
#include "mirror/telemetry/training_telemetry.h"
#include "mirror/train/config.h"
#include "mirror/train/grad_compression.h"
#include "mirror/train/grad_sync.h"
#include "mirror/train/training.h"
#include "epoch_reporter.h"
#include "epoch_times.h"
#include "progress.h"
#include "replica_reducer.h"
#include "state_transfer.h"
#include "step_engine.h"

namespace mirror::train {

// Rank 0: makes best.h5 in `dir` the checkpoint file `checkpoint` (atomically).
void keep_as_best(const std::string& checkpoint, const std::string& dir);

class Trainer {
 public:
  // Sets everything up (collective: every rank constructs one). The configuration is validated and the device
  // resolved by the caller (context.device), once.
  Trainer(const TrainConfig& config, const TrainContext& context);
  // Trains to the end (or to --max-steps, or to a stop request) and writes the final checkpoint.
  TrainSummary run();

 private:
  // Setup, in order (trainer_setup.cc).
  void setup_model_graph();      // dataset, the model's layers (no collectives)
  void take_init_checkpoint();   // --init-from: its file, and its model when --model is not given
  void setup_data();             // loader, steps, schedule
  // Collective on a transport that shares buffers: the model built into shared gradients (and sharded
  // parameters), then its optimizer.
  void setup_model_and_optimizer();
  bool shares_buffers() const;   // the gradient communicator's shared buffers are used directly (CPU, world > 1)
  // `bytes` of shared memory kept in `slot`, or null (and shared_memory_failed_ set) where /dev/shm fails.
  void* shared_memory(coll::SharedBuffer& slot, std::size_t bytes);
  void restore_state();          // initial parameters from rank 0, or a checkpoint
  void setup_gradient_sync();
  void setup_telemetry();        // TensorBoard (rank 0) and the timeline: collective (clock offsets)
  void setup_step_and_epoch();   // the step engine and the epoch reporter
  void print_banner() const;
  std::string weight_decay_line() const;  // the banner's weight-decay line
  std::string grad_dtype_text() const;    // the banner's gradient type
  std::string precision_text() const;     // the banner's compute precision
  void prepare_outputs();        // rank 0: metrics and checkpoint directories, stale temporaries

  // Training (trainer.cc). An epoch ends complete, or stopped (by --max-steps or a stop request) inside it or
  // after its last step.
  enum class EpochEnd { kCompleted, kStoppedInside, kStoppedAtEnd };
  EpochEnd run_epoch();
  // One step by the engine; what it agreed on handled here (a stop, an fp16 overflow, a non-finite step).
  void train_step(EpochTimes& times);
  void skip_overflowed_step();   // fp16: warn, halve the loss scale
  [[noreturn]] void throw_diverged(std::int64_t step, const std::string& what) const;
  void end_epoch(const EpochTimes& times);
  void report_inside_epoch(EpochTimes& times);  // --eval-every-steps (language models); times restart after it
  void announce_early_stop();    // --early-stop's verdict: stop, and say why
  void abandon_for_stop();       // the evaluation was left for a stop request: no test figures, stop after the epoch
  void save_checkpoint();        // collective; rank 0 writes
  void save_epoch_checkpoint();  // at an epoch's end, stored as the start of the next epoch

  std::int64_t micro_per_epoch() const { return steps_per_epoch_ * accum_; }

  TrainConfig config_;
  TrainContext ctx_;
  coll::Communicator& control_;
  int rank_, world_;
  std::ostream* out_;

  nn::Device device_;
  std::optional<data::Dataset> dataset_;
  std::optional<nn::ModelGraph> graph_;  // until the model is built into its memory
  std::unique_ptr<nn::Model> model_;
  bool sharded_ = false;
  coll::SharedBuffer grad_memory_, param_memory_, wire_memory_;  // wire: the 16-bit gradients (--grad-dtype)
  std::string shared_memory_failed_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<data::TrainLoader> loader_;
  std::int64_t accum_ = 1, steps_per_epoch_ = 0, total_steps_ = 0;
  std::int64_t context_ = 0;     // a language model's window length (0: not a language model)
  std::string init_path_;        // --init-from's checkpoint file ("" without it)
  std::optional<CheckpointState> init_state_;  // rank 0: that file, when it was read for its model (until restored)
  std::string model_label_;      // the banner's name of the model ("": config_.model)
  std::optional<nn::LrSchedule> schedule_;
  std::unique_ptr<GradientBucketer> bucketer_;
  LossScaler scaler_;            // --grad-dtype fp16 (disabled otherwise)
  CommReplicaReducer reducer_;
  std::unique_ptr<ProgressBar> bar_;
  std::unique_ptr<telemetry::TrainingTelemetry> telemetry_;
  std::unique_ptr<StepEngine> engine_;
  std::unique_ptr<EpochReporter> reporter_;

  RunPosition pos_;
  TrainSummary summary_;
  bool resumed_ = false;
  bool stop_agreed_ = false;
  bool early_stopped_ = false;
  std::int64_t last_checkpoint_step_ = -1;
};

}  // namespace mirror::train
