// epoch_reporter.h — the end of an epoch, as data-parallel trainers report it: the evaluation on the test split
// (spread over the ranks), the epoch's training sums over all ranks in one all-reduce, the metrics line printed,
// appended to the metrics file (JSON lines, written atomically) and sent to TensorBoard, and rank 0's verdict
// for --keep-best and --early-stop, shared with the other ranks. Private to trainer/.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "mirror/coll/communicator.h"
#include "mirror/data/dataset.h"
#include "mirror/nn/model.h"
#include "mirror/telemetry/training_telemetry.h"
#include "mirror/train/config.h"
#include "mirror/train/grad_compression.h"
#include "best_tracker.h"
#include "epoch_times.h"
#include "state_transfer.h"

namespace mirror::train {

// What an epoch's end came to, the same on every rank.
struct EpochVerdict {
  bool evaluated = false;   // the test split was evaluated this epoch
  bool abandoned = false;   // a stop request came during the evaluation, which every rank left
  double test_loss = 0.0, test_acc = 0.0;
  bool improved = false;    // --keep-best: a new best
  bool stop = false;        // --early-stop: no improvement for its patience
};

class EpochReporter {
 public:
  // Everything referenced lives as long as the reporter. `gradients`: --no-sync-bn averages the running
  // statistics over it before an evaluation. `out`: rank 0's output (others: null).
  EpochReporter(const TrainConfig& config, nn::Model& model, const data::Dataset& dataset,
                coll::Communicator& control, coll::Communicator& gradients, telemetry::TrainingTelemetry& telemetry,
                std::ostream* out, const std::atomic<bool>* stop_requested);

  // Collective, at the end of epoch pos.epoch (its last step done): evaluation when it is due, the metrics line
  // (rank 0 appends it to pos.metrics_jsonl and prints it), the best verdict. lr: the last step's.
  EpochVerdict report(const EpochTimes& times, RunPosition& pos, double lr, const LossScaler& scaler);
  // Collective, a language model inside an epoch (--eval-every-steps): evaluation on at most --eval-batches
  // batches and a metrics line for the interval since the previous line.
  EpochVerdict report_inside_epoch(const EpochTimes& times, RunPosition& pos, double lr, const LossScaler& scaler);
  // A language model's lines report the training loss of the interval since the previous line: its start is
  // here (after a resume, and after every line).
  void start_interval(const RunPosition& pos);

  BestTracker& best() { return best_; }
  // --no-sync-bn: the ranks' running statistics averaged (before checkpoints and evaluation).
  void agree_on_buffers();

 private:
  void evaluate_if_due(std::int64_t epoch, EpochVerdict& verdict);
  void evaluate_test(std::int64_t max_batches, EpochVerdict& verdict);
  // The shared part of both reports: sums over the ranks, the line written, the verdict.
  void write_line(const EpochTimes& t, RunPosition& pos, double lr, const LossScaler& scaler, EpochVerdict& verdict);
  // Rank 0: a language model's line (tokens/s, perplexity, bits per byte).
  void add_text_metrics(nlohmann::ordered_json& m, const EpochTimes& t, const EpochVerdict& verdict,
                        const double* sums) const;
  std::string printed_text_line(const nlohmann::ordered_json& m) const;
  // Rank 0: the JSON object of the epoch (from sums over all ranks) and its printed line.
  nlohmann::ordered_json metrics(const EpochTimes& t, const RunPosition& pos, double lr, const LossScaler& scaler,
                                 const EpochVerdict& verdict, const double* sums) const;
  std::string printed_line(const nlohmann::ordered_json& m, std::int64_t epoch) const;
  void judge(const nlohmann::ordered_json& m, std::int64_t step, EpochVerdict& verdict);  // collective

  const TrainConfig& config_;
  nn::Model& model_;
  const data::Dataset& dataset_;
  coll::Communicator& control_;
  coll::Communicator& gradients_;
  telemetry::TrainingTelemetry& telemetry_;
  std::ostream* out_;
  const std::atomic<bool>* stop_requested_;
  BestTracker best_;
  const bool text_;                      // a language model on a token dataset
  double interval_loss_start_ = 0.0;     // text: this rank's epoch sums where the interval began
  std::int64_t interval_correct_start_ = 0, interval_samples_start_ = 0;
};

}  // namespace mirror::train
