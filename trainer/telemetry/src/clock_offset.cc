// clock_offset.cc — ping-pong over broadcasts, min-round-trip sample per rank, shared with every rank.
#include "mirror/telemetry/clock_offset.h"

#include <limits>

#include "mirror/error.h"
#include "mirror/telemetry/timeline.h"

namespace mirror::telemetry {

ClockOffsets measure_clock_offsets(coll::Communicator& comm, int rounds, const std::function<std::int64_t()>& now_in) {
  MIRROR_CHECK(rounds > 0, kInvalidArgument, "clock offset measurement needs at least one round, got " << rounds);
  const std::function<std::int64_t()> now = now_in ? now_in : std::function<std::int64_t()>(now_ns);
  const int n = comm.size(), me = comm.rank();
  ClockOffsets result;
  result.offset_ns.assign(n, 0);
  result.rtt_ns.assign(n, 0);
  for (int r = 1; r < n; ++r) {
    std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max();
    for (int k = 0; k < rounds; ++k) {
      std::int64_t t0 = me == 0 ? now() : 0;
      comm.broadcast(&t0, 1, coll::DataType::kInt64, 0);  // ping
      std::int64_t tr = me == r ? now() : 0;
      comm.broadcast(&tr, 1, coll::DataType::kInt64, r);  // pong, carrying rank r's clock
      if (me != 0) continue;
      const std::int64_t t1 = now();
      if (t1 - t0 < best_rtt) {
        best_rtt = t1 - t0;
        result.rtt_ns[r] = best_rtt;
        result.offset_ns[r] = t0 + (t1 - t0) / 2 - tr;
      }
    }
  }
  comm.broadcast(result.offset_ns.data(), n, coll::DataType::kInt64, 0);
  comm.broadcast(result.rtt_ns.data(), n, coll::DataType::kInt64, 0);
  return result;
}

}  // namespace mirror::telemetry
