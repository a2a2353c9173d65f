// best_tracker.h — --keep-best METRIC and --early-stop PATIENCE: which evaluation was the best so far (in
// the metric's direction, by more than --min-delta, as Keras' EarlyStopping and ModelCheckpoint
// save_best_only judge it), and how many evaluations have passed without improvement. Its state is a pure
// function of the metrics lines (one per epoch), which every checkpoint carries: a resumed run replays them
// and continues counting exactly where the interrupted one was. Private to trainer/.
#pragma once

#include <cstdint>
#include <string>

#include "mirror/train/config.h"

namespace mirror::train {

class BestTracker {
 public:
  BestTracker(BestMetric metric, double min_delta) : metric_(metric), min_delta_(min_delta) {}

  bool enabled() const { return metric_ != BestMetric::kNone; }
  // The metric's key in a metrics line ("test_acc", ...), or "" when none.
  const char* key() const;
  // Takes one epoch's value (NaN: not evaluated this epoch, ignored); true when it is a new best.
  bool observe(double value, std::int64_t step);
  // Replays the metrics lines of a checkpoint (JSON objects, one per line).
  void replay(const std::string& metrics_jsonl);

  double best() const { return best_; }
  std::int64_t best_step() const { return best_step_; }
  std::int64_t since_best() const { return since_; }  // evaluations since the best one

 private:
  BestMetric metric_;
  double min_delta_;
  double best_ = 0.0;
  std::int64_t best_step_ = -1;  // -1: no evaluation yet
  std::int64_t since_ = 0;
};

}  // namespace mirror::train
