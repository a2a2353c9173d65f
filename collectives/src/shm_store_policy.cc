// shm_store_policy.cc — StagingStorePolicy: the choice between plain and streaming staging stores.
#include "shm_store_policy.h"

#include <bit>

namespace mirror::coll::detail {

StagingStorePolicy::SizeClass& StagingStorePolicy::size_class(std::size_t bytes) {
  return classes_[static_cast<std::size_t>(std::bit_width(bytes)) % kSizeClasses];
}

const StagingStorePolicy::SizeClass& StagingStorePolicy::size_class(std::size_t bytes) const {
  return classes_[static_cast<std::size_t>(std::bit_width(bytes)) % kSizeClasses];
}

bool StagingStorePolicy::streaming(std::size_t bytes) const {
  switch (mode_) {
    case ShmStaging::kCached: return false;
    case ShmStaging::kStreaming: return true;
    case ShmStaging::kAuto: break;
  }
  const SizeClass& c = size_class(bytes);
  if (c.cost[0] < 0) return false;  // measure each choice first (two calls each: see record)
  if (c.cost[1] < 0) return true;
  const bool best = c.cost[1] < c.cost[0];
  // The last two calls of every period try the other choice; only the second of them is measured.
  return c.calls % kExploreEvery >= kExploreEvery - 2 ? !best : best;
}

bool StagingStorePolicy::streaming_cheaper(std::size_t bytes) const {
  if (mode_ != ShmStaging::kAuto) return mode_ == ShmStaging::kStreaming;
  const SizeClass& c = size_class(bytes);
  return c.cost[0] >= 0 && c.cost[1] >= 0 && c.cost[1] < c.cost[0];
}

void StagingStorePolicy::record(bool streamed, std::size_t bytes, std::chrono::nanoseconds work) {
  const int k = streamed ? 1 : 0;
  ++counts_[k];
  SizeClass& c = size_class(bytes);
  ++c.calls;
  // The first call of a size class after a change of its choice (or its first call at all) pays for the
  // change: lines the other choice left in memory or in the other core's cache. It says nothing about the
  // steady state. (Per class: sizes that alternate with different choices pay that on every call, and
  // then that is their steady state.)
  const bool after_change = c.calls == 1 || c.last_streamed != streamed;
  c.last_streamed = streamed;
  if (after_change || bytes == 0) return;
  const double per_byte = static_cast<double>(work.count()) / static_cast<double>(bytes);
  double& estimate = c.cost[k];
  // A faster sample is taken as it is (noise on a shared machine only ever slows a call down, so a fast
  // sample is what the choice can do now); a slower one gets half weight, so one descheduled call cannot
  // flip the choice, while a lasting slowdown shows within two calls.
  estimate = estimate < 0 || per_byte < estimate ? per_byte : 0.5 * (estimate + per_byte);
}

}  // namespace mirror::coll::detail
