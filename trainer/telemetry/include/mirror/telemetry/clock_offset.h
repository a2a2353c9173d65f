// mirror/telemetry/clock_offset.h — each rank's steady-clock offset against rank 0, measured at start-up so
// that the merged timeline puts every rank's spans on rank 0's time axis.
//
// For each rank r > 0 in turn, `rounds` ping-pongs over the communicator: rank 0 reads its clock (t0) and
// broadcasts; rank r reads its clock on arrival (tr) and broadcasts tr back; rank 0 reads its clock again
// (t1). The round trip is t1 - t0; rank r's clock read lay inside it, so rank 0's time at that moment is
// about (t0 + t1) / 2 with an error of at most half the round trip (Cristian's algorithm). The round with
// the smallest round trip gives offset[r] = (t0 + t1) / 2 - tr. The other ranks take part in each
// broadcast (the Communicator has collectives only), which costs time but does not skew the estimate.
// Collective over a host-backend communicator (the control one): every rank calls it with the same rounds;
// every rank gets every rank's offset.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "mirror/coll/communicator.h"

namespace mirror::telemetry {

struct ClockOffsets {
  std::vector<std::int64_t> offset_ns;  // add to rank r's clock to get rank 0's (offset_ns[0] = 0)
  std::vector<std::int64_t> rtt_ns;     // the round trip of the sample taken (the error bound is half)
};

// now: this rank's clock in ns (the steady clock; tests pass a skewed one).
ClockOffsets measure_clock_offsets(coll::Communicator& comm, int rounds = 8,
                                   const std::function<std::int64_t()>& now = {});

}  // namespace mirror::telemetry
