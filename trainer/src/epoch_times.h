// epoch_times.h — the time one rank spent in an epoch's parts, filled in by the step engine and read by the
// epoch reporter (step_engine.h, epoch_reporter.h). A language model's run may report inside an epoch
// (--eval-every-steps): the times then cover the interval since the previous report. Private to trainer/.
#pragma once

#include <chrono>
#include <cstdint>

namespace mirror::train {

struct EpochTimes {
  std::chrono::steady_clock::time_point start;
  double data_wait = 0.0, comm_wait = 0.0, optimizer = 0.0, gather = 0.0, train = 0.0;
  std::int64_t steps = 0;    // optimizer steps in this epoch on this run
  std::int64_t skipped = 0;  // of them, skipped for an fp16 overflow
  std::int64_t trained = 0;  // samples (language models: target tokens) this rank trained on in this epoch on this run
  double grad_norm = -1.0;   // --grad-clip: the last step's norm of the averaged gradient (-1: not measured)
  // The steady-state window: from the end of this run's kSteadySkipSteps-th step of the epoch to its end
  // (as the peers in docs/benchmarks.md time it), leaving out warm-up (first allocations, primitive set-up).
  std::chrono::steady_clock::time_point steady_start;
  std::int64_t trained_before_steady = -1;  // -1: the epoch had no more than kSteadySkipSteps steps
  static constexpr std::int64_t kSteadySkipSteps = 20;
};

}  // namespace mirror::train
