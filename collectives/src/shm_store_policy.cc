// shm_store_policy.cc — StagingStorePolicy: the choice between plain and streaming staging stores.
#include "shm_store_policy.h"

namespace mirror::coll::detail {

bool StagingStorePolicy::streaming() const {
  switch (mode_) {
    case ShmStaging::kCached: return false;
    case ShmStaging::kStreaming: return true;
    case ShmStaging::kAuto: break;
  }
  if (cost_[0] < 0) return false;  // measure each choice first (two calls each: see record)
  if (cost_[1] < 0) return true;
  const bool best = cost_[1] < cost_[0];
  // The last two calls of every period try the other choice; only the second of them is measured.
  const std::uint64_t at = (counts_[0] + counts_[1]) % kExploreEvery;
  return at >= kExploreEvery - 2 ? !best : best;
}

void StagingStorePolicy::record(bool streamed, std::size_t bytes, std::chrono::nanoseconds work) {
  const int k = streamed ? 1 : 0;
  ++counts_[k];
  // The first call after a change of choice (or the first call at all) pays for the change: lines the
  // other choice left in memory or in the other core's cache. It says nothing about the steady state.
  const bool after_change = !have_last_ || last_ != streamed;
  have_last_ = true;
  last_ = streamed;
  if (after_change || bytes == 0) return;
  const double per_byte = static_cast<double>(work.count()) / static_cast<double>(bytes);
  double& estimate = cost_[k];
  // A faster sample is taken as it is (noise on a shared machine only ever slows a call down, so a fast
  // sample is what the choice can do now); a slower one gets half weight, so one descheduled call cannot
  // flip the choice, while a lasting slowdown shows within two calls.
  estimate = estimate < 0 || per_byte < estimate ? per_byte : 0.5 * (estimate + per_byte);
}

}  // namespace mirror::coll::detail
