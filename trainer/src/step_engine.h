// step_engine.h — one optimizer step of data-parallel training, the part of a run that repeats: for each of
// the --accum-steps micro-batches the loader's batch, forward, the loss and backward, each gradient handed to
// the bucketer as soon as it is final; then the wait for the averaged gradients, one small all-reduce in which
// the ranks agree on a stop request and on non-finite values, the gradient-norm clipping, the optimizer step (this rank's shard of it when
// sharded) and the all-gather of the updated parameters. It knows nothing of epochs, metrics or checkpoints.
// Private to trainer/.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/data/loader.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model.h"
#include "mirror/nn/optimizer.h"
#include "mirror/telemetry/timeline.h"
#include "mirror/train/config.h"
#include "mirror/train/grad_compression.h"
#include "mirror/train/grad_sync.h"
#include "epoch_times.h"
#include "replica_reducer.h"
#include "state_transfer.h"

namespace mirror::train {

// What the engine works with; all of it owned by the Trainer and alive as long as the engine.
struct StepParts {
  nn::Model& model;
  nn::Optimizer& optimizer;
  GradientBucketer& bucketer;
  data::TrainLoader& loader;
  coll::Communicator& control;     // the agreement's all-reduce
  nn::ReplicaReducer* reducer;     // SyncBN's statistics over the ranks; null: this rank's batch only
  telemetry::Timeline& timeline;
  LossScaler& scaler;              // --grad-dtype fp16 (disabled otherwise)
  const std::atomic<bool>* stop_requested;  // SIGTERM/SIGINT on this rank; may be null
};

// What a step came to, the same on every rank.
struct StepOutcome {
  bool stop = false;           // some rank was asked to stop: the run stops after this step
  bool overflowed = false;     // fp16 gradients overflowed: nothing applied, the loss scale is to be halved
  std::string non_finite;      // not empty: what turned NaN or Inf ("the loss", ...); nothing applied, no step
};

class StepEngine {
 public:
  // accum: micro-batches per step; owned: the gradient ranges this rank updates (all, or its shard); grad_clip:
  // the largest L2 norm of the averaged gradient (0: no clipping).
  StepEngine(StepParts parts, std::uint64_t seed, std::int64_t accum, std::vector<nn::Optimizer::Range> owned,
             double grad_clip = 0.0);

  // One optimizer step from `pos` at learning rate `lr`: pos's micro-batch, step and epoch sums move on (the
  // step count too when nothing turned non-finite); `times` adds up the parts.
  StepOutcome step(RunPosition& pos, EpochTimes& times, float lr);

  const std::vector<nn::Optimizer::Range>& owned() const { return owned_; }

 private:
  void micro_step(std::int64_t k, RunPosition& pos, EpochTimes& times);
  StepOutcome agree(double step_loss);  // collective
  // --grad-clip: the norm of the averaged gradient over all parameters (the shards' squares summed over the
  // ranks when sharded: collective then), and the owned gradients scaled by min(1, clip / (norm + 1e-6)).
  double clip_gradients();

  StepParts parts_;
  std::uint64_t seed_;
  std::int64_t accum_;
  std::vector<nn::Optimizer::Range> owned_;
  double grad_clip_;
  nn::SoftmaxCrossEntropy loss_;
  bool gradient_over_logits_;  // dlogits_ views the logits (nn::Model::logits_may_hold_their_gradient)
  nn::Tensor staging_, dlogits_;
  data::Batch batch_;
};

}  // namespace mirror::train
