// shm_store_policy.h — StagingStorePolicy: whether one rank writes its shared-memory staging buffers with
// plain or non-temporal stores in large allreduces.
//
// Why a choice at all: a plain store to a line that the other rank has just read must first invalidate
// that rank's copy. Between cores that share a cache this is cheap; between virtual CPUs that the
// hypervisor has placed on different core complexes or sockets it costs an order of magnitude more, while
// non-temporal stores cost the same either way (docs/collectives-shm.md, "Staging stores"). Plain stores
// win when the placement is good, streaming stores avoid a several times slower allreduce when it is not,
// and the placement changes while a job runs. So in kAuto mode each
// rank times its own work (waits excluded) per byte under both choices, keeps the cheaper, and re-measures
// the other in the last two calls of every kExploreEvery (the first call after a change of choice is not
// counted: it pays for lines the other choice left behind). Costs are kept per power-of-two size class:
// a message that fits the cache costs less per byte than one that does not, whatever the stores. Every
// rank decides for itself, all ranks see the same calls, and the results do not depend on the choice.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

class StagingStorePolicy {
 public:
  // Exploring costs a call or two of the slower choice, which can be several times slower, so it
  // is rare; a slowdown of the current choice shows at once anyway, only a recovery waits for it.
  static constexpr std::uint64_t kExploreEvery = 64;

  explicit StagingStorePolicy(ShmStaging mode) : mode_(mode) {}

  // Whether the next large allreduce, of `bytes`, writes staging buffers with non-temporal stores.
  bool streaming(std::size_t bytes) const;
  // Whether streaming stores were measured cheaper for messages of `bytes` (fixed modes: whether they are
  // used): i.e. whether invalidating lines in the other rank's cache costs much under the current placement.
  bool streaming_cheaper(std::size_t bytes) const;
  // The work time (waits excluded) of an allreduce of `bytes` run with `streamed` stores.
  void record(bool streamed, std::size_t bytes, std::chrono::nanoseconds work);
  // Calls recorded so far with each choice: [0] plain, [1] streaming.
  std::uint64_t calls(bool streamed) const { return counts_[streamed ? 1 : 0]; }

 private:
  static constexpr std::size_t kSizeClasses = 65;  // std::bit_width of the message bytes
  struct SizeClass {
    double cost[2] = {-1.0, -1.0};  // ns per byte, [0] plain, [1] streaming; < 0 until measured
    std::uint64_t calls = 0;
    bool last_streamed = false;  // the choice of this class's last call
  };
  SizeClass& size_class(std::size_t bytes);
  const SizeClass& size_class(std::size_t bytes) const;

  ShmStaging mode_;
  SizeClass classes_[kSizeClasses];
  std::uint64_t counts_[2] = {0, 0};
};

}  // namespace mirror::coll::detail
