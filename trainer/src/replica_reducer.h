// replica_reducer.h — nn::ReplicaReducer over a communicator: what synchronised BatchNorm calls to gather its
// per-rank batch statistics and to sum its gradient sums over all data-parallel ranks (a blocking float32
// all-gather, a blocking in-place float32 sum all-reduce), and the
// averaging of the layers' buffers over the ranks that --no-sync-bn does before checkpoints and evaluation.
// Private to trainer/.
#pragma once

#include <cstddef>

#include "mirror/coll/communicator.h"
#include "mirror/nn/layer.h"
#include "mirror/nn/model.h"

namespace mirror::train {

// `comm` must take memory of the model's device (the gradient communicator: NCCL on CUDA, host on the CPU).
// Collective: every rank's forward calls sum() in the same order, since every rank runs the same layers.
class CommReplicaReducer final : public nn::ReplicaReducer {
 public:
  explicit CommReplicaReducer(coll::Communicator& comm) : comm_(comm) {}
  void sum(float* data, std::size_t count) override {
    comm_.allreduce(data, data, count, coll::DataType::kFloat32, coll::ReduceOp::kSum);
  }
  void gather(const float* mine, float* all, std::size_t count) override {
    comm_.allgather(mine, all, count, coll::DataType::kFloat32);
  }
  int replicas() const override { return comm_.size(); }

 private:
  coll::Communicator& comm_;
};

// Replaces every rank's model buffers by their mean over the ranks of `comm` (nothing when the model has
// none or there is one rank). Collective.
inline void average_buffers(nn::Model& model, coll::Communicator& comm) {
  if (model.num_buffer_values() == 0 || comm.size() == 1) return;
  comm.allreduce(model.buffer_data(), model.buffer_data(), static_cast<std::size_t>(model.num_buffer_values()),
                 coll::DataType::kFloat32, coll::ReduceOp::kAvg);
}

}  // namespace mirror::train
