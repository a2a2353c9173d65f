// shm_control.h — ShmControl: the synchronisation block at the start of the shared-memory segment.
//
// Per rank, on its own cache line, a phase counter: a rank stores phase p (release) when it has written
// everything it contributes to step p, and waits (acquire) until every rank's counter is >= p. The phase
// number is the same on every rank (all ranks run the same steps), so a counter below p is a rank that
// has not arrived. Per rank also two descriptors (indexed by call sequence number parity) of the
// collective it is in: (seq, op, count, dtype, redop, root). The first step of every collective checks
// that all ranks' descriptors agree, so mismatched calls fail with kInvalidArgument instead of mixing
// data. Waits spin briefly, then sleep on a futex on the missing rank's counter (shared, not private:
// the segment is mapped by several processes), woken by that rank's signal when it sees a waiter
// registered (no lost wake-ups: both sides use sequentially consistent operations), so a machine
// loaded with other work does not leave a rank polling or oversleeping. Waits give up at the op's
// deadline with kTimeout naming the op, the phase, and the ranks that did not arrive with the last
// collective each issued.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "call.h"
#include "transport.h"

namespace mirror::coll::detail {

class ShmControl {
 public:
  // Bytes of the control block for `size` ranks (a multiple of 4096).
  static std::size_t bytes(int size);

  ShmControl(unsigned char* base, int rank, int size);

  // Writes this rank's descriptor of `call` (before the call's first signal).
  void publish(const CollectiveCall& call);
  // This rank has finished its writes for `phase`.
  void signal(std::uint64_t phase);
  // Blocks until every rank signalled `phase`; throws kTimeout at ctx.deadline.
  void wait_all(std::uint64_t phase, const OpContext& ctx) const;
  // After the first wait of `call`: throws kInvalidArgument if any rank's descriptor differs.
  void check_agreement(const CollectiveCall& call) const;

 private:
  struct alignas(64) PhaseLine {
    std::atomic<std::uint64_t> phase;    // the futex word is its low 32 bits (little-endian)
    std::atomic<std::uint32_t> waiters;  // ranks sleeping on `phase`
  };
  struct alignas(64) DescLine {
    // [parity][0] seq, [1] kind | dtype << 8 | op << 16 | (root + 1) << 32, [2] count
    std::atomic<std::uint64_t> word[2][3];
  };
  CollectiveCall read_desc(int rank, std::uint64_t seq_parity) const;
  CollectiveCall latest_desc(int rank) const;  // for timeout messages
  // Sleeps until rank q's phase reaches `phase`, the deadline passes, or a short slice ends.
  void sleep_on(int q, std::uint64_t phase, const OpContext& ctx) const;
  [[noreturn]] void throw_timeout(std::uint64_t phase, const OpContext& ctx) const;

  PhaseLine* phases_;
  DescLine* descs_;
  int rank_;
  int size_;
};

}  // namespace mirror::coll::detail
