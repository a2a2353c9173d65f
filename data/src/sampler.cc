// sampler.cc — Sampler: per-epoch permutations and each rank's slice of every global batch.
#include "mirror/data/sampler.h"

#include "mirror/error.h"
#include "rng.h"

namespace mirror::data {

void check_sampler_options(const SamplerOptions& o, const std::string& what) {
  MIRROR_CHECK(o.world_size >= 1, kInvalidArgument, "world size must be >= 1, got " << o.world_size);
  MIRROR_CHECK(o.rank >= 0 && o.rank < o.world_size, kInvalidArgument,
               "rank " << o.rank << " is out of range; expected 0 <= rank < " << o.world_size << " (world size)");
  MIRROR_CHECK(o.batch_per_rank >= 1, kInvalidArgument, "batch per rank must be >= 1, got " << o.batch_per_rank);
  const int64_t global = o.batch_per_rank * o.world_size;
  if (o.dataset_size < global) {
    std::ostringstream fits;
    const int64_t max_ranks = o.dataset_size / o.batch_per_rank;
    const int64_t max_batch = o.dataset_size / o.world_size;
    if (max_ranks >= 1) fits << "at most " << max_ranks << " ranks x " << o.batch_per_rank << " would fit";
    if (max_batch >= 1) fits << (max_ranks >= 1 ? ", or " : "") << o.world_size << " ranks x batch " << max_batch;
    if (max_ranks < 1 && max_batch < 1) fits << "1 rank x batch " << o.dataset_size << " would fit";
    MIRROR_THROW(kInvalidArgument, what << " has " << o.dataset_size << " samples, fewer than one global batch of "
                                        << o.world_size << " ranks x " << o.batch_per_rank << " = " << global << "; "
                                        << fits.str());
  }
}

Sampler::Sampler(SamplerOptions options) : options_(options) {
  check_sampler_options(options_);
  steps_ = options_.dataset_size / global_batch_size();
}

std::shared_ptr<const std::vector<int64_t>> Sampler::epoch_order(int64_t epoch) const {
  MIRROR_CHECK(epoch >= 0, kInvalidArgument, "epoch must be >= 0, got " << epoch);
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->order && cache_->epoch == epoch) return cache_->order;
  cache_->order = std::make_shared<const std::vector<int64_t>>(
      permutation(options_.dataset_size, mix_key(options_.seed, static_cast<uint64_t>(epoch))));
  cache_->epoch = epoch;
  return cache_->order;
}

std::vector<int64_t> Sampler::global_batch(int64_t epoch, int64_t step) const {
  MIRROR_CHECK(step >= 0 && step < steps_, kInvalidArgument,
               "step " << step << " is out of range; expected 0 <= step < " << steps_ << " (steps per epoch)");
  auto order = epoch_order(epoch);
  const auto first = order->begin() + step * global_batch_size();
  return std::vector<int64_t>(first, first + global_batch_size());
}

std::vector<int64_t> Sampler::indices(int64_t epoch, int64_t step) const {
  MIRROR_CHECK(step >= 0 && step < steps_, kInvalidArgument,
               "step " << step << " is out of range; expected 0 <= step < " << steps_ << " (steps per epoch)");
  auto order = epoch_order(epoch);
  const auto first = order->begin() + step * global_batch_size() + options_.rank * options_.batch_per_rank;
  return std::vector<int64_t>(first, first + options_.batch_per_rank);
}

}  // namespace mirror::data
