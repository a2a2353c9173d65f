// trainer.h — the data-parallel training run as a class whose parts each do one thing: set up (device,
// data, model, optimizer, shared buffers, initial state, gradient bucketer), print the banner, run the
// epochs step by step, end each epoch (sums over the ranks, evaluation, the metrics line) and write
// checkpoints. train() (mirror/train/training.h) is a thin function over it. Private to trainer/.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/data/dataset.h"
#include "mirror/data/loader.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model.h"
#include "mirror/nn/optimizer.h"
#include "mirror/nn/schedule.h"
#include "mirror/telemetry/training_telemetry.h"
#include "mirror/train/config.h"
#include "mirror/train/grad_compression.h"
#include "mirror/train/grad_sync.h"
#include "mirror/train/training.h"
#include "best_tracker.h"
#include "progress.h"
#include "replica_reducer.h"
#include "state_transfer.h"

namespace mirror::train {

// Rank 0: makes best.h5 in `dir` the checkpoint file `checkpoint` (atomically).
void keep_as_best(const std::string& checkpoint, const std::string& dir);

class Trainer {
 public:
  // Validates the configuration and sets everything up (collective: every rank constructs one).
  Trainer(const TrainConfig& config, const TrainContext& context);
  // Trains to the end (or to --max-steps, or to a stop request) and writes the final checkpoint.
  TrainSummary run();

 private:
  // Time spent in one epoch's parts, on this rank.
  struct EpochTimes {
    std::chrono::steady_clock::time_point start;
    double data_wait = 0.0, comm_wait = 0.0, optimizer = 0.0, gather = 0.0, train = 0.0;
    std::int64_t steps = 0;    // optimizer steps in this epoch on this run
    std::int64_t skipped = 0;  // of them, skipped for an fp16 overflow
    std::int64_t trained = 0;  // samples this rank trained on in this epoch on this run
    // The steady-state window: from the end of this run's kSteadySkipSteps-th step of the epoch to its end
    // (as the peers in docs/benchmarks.md time it), leaving out warm-up (first allocations, primitive set-up).
    std::chrono::steady_clock::time_point steady_start;
    std::int64_t trained_before_steady = -1;  // -1: the epoch had no more than kSteadySkipSteps steps
  };
  static constexpr std::int64_t kSteadySkipSteps = 20;

  // Setup, in order.
  void setup_model();            // device, dataset, model (no collectives)
  void setup_shared_memory();    // collective: gradients (and sharded parameters) in shared buffers
  void setup_data_and_optimizer();
  void restore_state();          // initial parameters from rank 0, or a checkpoint
  void setup_gradient_sync();
  void setup_telemetry();        // TensorBoard (rank 0) and the timeline: collective (clock offsets)
  void print_banner() const;
  std::string weight_decay_line() const;  // the banner's weight-decay line
  std::string grad_dtype_text() const;    // the banner's gradient type
  void prepare_outputs();        // rank 0: metrics and checkpoint directories, stale temporaries

  // Training. An epoch ends complete, or stopped (by --max-steps or a stop request) inside it or after its
  // last step.
  enum class EpochEnd { kCompleted, kStoppedInside, kStoppedAtEnd };
  EpochEnd run_epoch();
  void train_step(EpochTimes& times);
  void micro_step(std::int64_t k, EpochTimes& times);
  // Collective, after the gradients are reduced and before the optimizer step: shares the stop request
  // and throws AgreedError(kNonFinite) on every rank when the step's loss or gradients are not finite
  // (gradients: unless fp16's loss scale is to blame, see below).
  // Returns false when fp16's gradients overflowed and the loss scale can still shrink: the step is then
  // skipped (on every rank alike) with a warning.
  bool agree_on_step(double step_loss);
  void skip_overflowed_step();   // fp16: warn, halve the loss scale
  [[noreturn]] void throw_diverged(std::int64_t step, const std::string& what) const;
  bool stop_requested();         // what agree_on_step (or an abandoned evaluation) found: any rank's request stops all
  void abandon_for_stop();       // the evaluation was left for a stop request: no test figures, stop after the epoch
  void end_epoch(const EpochTimes& times);
  std::string metrics_line(const EpochTimes& times, double test_loss, double test_acc, bool evaluated);
  struct BestVerdict {
    bool improved = false, stop = false;
  };
  BestVerdict judge_epoch();     // collective: rank 0's --keep-best / --early-stop verdict on the epoch
  void save_checkpoint();        // collective; rank 0 writes
  void save_epoch_checkpoint();  // at an epoch's end, stored as the start of the next epoch
  // --no-sync-bn: the ranks' running statistics averaged (before checkpoints and evaluation).
  void agree_on_buffers();

  std::int64_t micro_per_epoch() const { return steps_per_epoch_ * accum_; }

  TrainConfig config_;
  TrainContext ctx_;
  coll::Communicator& control_;
  int rank_, world_;
  std::ostream* out_;

  nn::Device device_;
  std::optional<data::Dataset> dataset_;
  std::unique_ptr<nn::Model> model_;
  bool sharded_ = false;
  coll::SharedBuffer grad_memory_, param_memory_, wire_memory_;  // wire: the 16-bit gradients (--grad-dtype)
  std::string shared_memory_failed_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<data::TrainLoader> loader_;
  std::int64_t accum_ = 1, steps_per_epoch_ = 0, total_steps_ = 0;
  std::optional<nn::LrSchedule> schedule_;
  std::unique_ptr<GradientBucketer> bucketer_;
  std::vector<nn::Optimizer::Range> owned_;
  LossScaler scaler_;            // --grad-dtype fp16 (disabled otherwise)
  std::optional<nn::SoftmaxCrossEntropy> loss_;
  CommReplicaReducer reducer_;
  std::unique_ptr<ProgressBar> bar_;
  std::unique_ptr<telemetry::TrainingTelemetry> telemetry_;

  RunPosition pos_;
  TrainSummary summary_;
  bool resumed_ = false;
  bool stop_agreed_ = false;
  bool early_stopped_ = false;
  std::optional<BestTracker> best_;
  std::int64_t last_checkpoint_step_ = -1;
  nn::Tensor staging_, dlogits_;
  data::Batch batch_;
};

}  // namespace mirror::train
