// mirror/train/training.h — the data-parallel training run: what `trainer` does between parsing its flags and
// exiting. Every rank calls train() with the same configuration; rank 0 prints, writes checkpoints and metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/nn/device.h"
#include "mirror/train/config.h"

namespace mirror::train {

struct TrainContext {
  coll::Communicator* control = nullptr;    // host backend: scalars, metrics, evaluation sums, state broadcast
  coll::Communicator* gradients = nullptr;  // the gradient all-reduce (nccl on CUDA, else == control)
  int local_rank = 0;
  nn::Device device;                        // resolved once by the caller (nn::resolve_device)
  std::ostream* out = nullptr;              // rank 0's output (others: nullptr)
  const std::atomic<bool>* stop_requested = nullptr;  // set by SIGTERM/SIGINT: checkpoint and stop
};

struct TrainSummary {
  std::int64_t steps = 0;            // optimizer steps done in all (resumed ones included)
  std::int64_t epoch = 0;            // epochs completed
  bool stopped_early = false;        // by a stop request
  double test_loss = 0.0, test_acc = 0.0;  // of the last evaluation (0 when none)
  std::string last_checkpoint;       // rank 0: path of the last checkpoint written or resumed from
};

// `config` as validate() left it (once, by the caller), with --progress decided (auto: off).
TrainSummary train(const TrainConfig& config, const TrainContext& context);

}  // namespace mirror::train
