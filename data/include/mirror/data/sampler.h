// mirror/data/sampler.h — Sampler: which sample indices every rank trains on at every step (no I/O).
//
// Every epoch is a fresh permutation of 0..dataset_size-1 drawn from (seed, epoch), identical on every
// rank. Step t's global batch is elements [t*W*B, (t+1)*W*B) of it (W ranks, B per rank) and rank r
// takes elements [r*B, (r+1)*B) of that. So W ranks with batch B see, at every step, exactly the samples
// one rank with batch W*B sees, and the ranks are disjoint within every step and epoch. Every rank runs
// steps_per_epoch() = floor(N / (W*B)) steps; the tail that does not fill a global batch is dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mirror::data {

struct SamplerOptions {
  uint64_t seed = 0;
  int world_size = 1;
  int rank = 0;
  int64_t batch_per_rank = 1;
  int64_t dataset_size = 0;
};

// Throws kInvalidArgument unless world_size >= 1, 0 <= rank < world_size, batch_per_rank >= 1 and
// dataset_size holds at least one global batch; `what` names the data in the message (e.g. "file 'f.h5'
// split '/train'"), which then says how many ranks x batch would fit.
void check_sampler_options(const SamplerOptions& options, const std::string& what = "the dataset");

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);  // validates with check_sampler_options

  const SamplerOptions& options() const { return options_; }
  int64_t steps_per_epoch() const { return steps_; }
  int64_t global_batch_size() const { return options_.batch_per_rank * options_.world_size; }

  // The permutation of epoch `epoch` (all N indices; the last N mod (W*B) are the dropped tail).
  std::shared_ptr<const std::vector<int64_t>> epoch_order(int64_t epoch) const;
  // This rank's batch_per_rank indices of step `step` (0 <= step < steps_per_epoch()), in batch order.
  std::vector<int64_t> indices(int64_t epoch, int64_t step) const;
  // All W*B indices of step `step`, rank 0's slice first.
  std::vector<int64_t> global_batch(int64_t epoch, int64_t step) const;

 private:
  SamplerOptions options_;
  int64_t steps_ = 0;
  // The last epoch's permutation, so that successive steps do not redraw it. Thread-safe; shared by
  // copies of this Sampler (it depends only on the options).
  struct Cache {
    std::mutex mutex;
    int64_t epoch = -1;
    std::shared_ptr<const std::vector<int64_t>> order;
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

}  // namespace mirror::data
