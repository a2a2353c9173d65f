// best_tracker.cc — BestTracker (best_tracker.h).
#include "best_tracker.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace mirror::train {

const char* BestTracker::key() const {
  switch (metric_) {
    case BestMetric::kNone: return "";
    case BestMetric::kTestAcc: return "test_acc";
    case BestMetric::kTestLoss: return "test_loss";
    case BestMetric::kTrainLoss: return "train_loss";
    case BestMetric::kTrainAcc: return "train_acc";
  }
  return "";
}

bool BestTracker::observe(double value, std::int64_t step) {
  if (!enabled() || std::isnan(value)) return false;
  const bool higher_is_better = metric_ == BestMetric::kTestAcc || metric_ == BestMetric::kTrainAcc;
  const bool improved = best_step_ < 0 || (higher_is_better ? value > best_ + min_delta_ : value < best_ - min_delta_);
  if (improved) {
    best_ = value;
    best_step_ = step;
    since_ = 0;
  } else {
    ++since_;
  }
  return improved;
}

void BestTracker::replay(const std::string& metrics_jsonl) {
  std::istringstream lines(metrics_jsonl);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json m = nlohmann::json::parse(line, nullptr, false);
    if (!m.is_object() || !m.contains(key()) || !m[key()].is_number()) continue;
    observe(m[key()].get<double>(), m.value("step", std::int64_t{0}));
  }
}

}  // namespace mirror::train
