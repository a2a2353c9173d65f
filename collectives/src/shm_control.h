// shm_control.h — ShmControl: the synchronisation block at the start of the shared-memory segment.
//
// Per rank, on its own cache line, a phase counter: a rank stores phase p (release) when it has written
// everything it contributes to step p, and waits (acquire) until every rank's counter is >= p. The phase
// number is the same on every rank (all ranks run the same steps), so a counter below p is a rank that
// has not arrived. Per rank also two descriptors (indexed by call sequence number parity) of the
// collective it is in: (seq, op, count, dtype, redop, root). The first step of every collective checks
// that all ranks' descriptors agree, so mismatched calls fail with kInvalidArgument instead of mixing
// data. Waits spin briefly (yielding the CPU between polls when the segment has more ranks than the machine
// has CPUs), then sleep on a futex on the missing rank's counter (shared, not private:
// the segment is mapped by several processes), woken by that rank's signal when it sees a waiter
// registered (no lost wake-ups: both sides use sequentially consistent operations), so a machine
// loaded with other work does not leave a rank polling or oversleeping. Per rank also a line of where
// the call's buffers lie in shared buffers (publish_buffers), for allreduces that read and write the
// other ranks' buffers directly, and a line of the call's buffer addresses in this rank's own address
// space (publish_addresses), for the single-copy paths (cross-memory attach). Waits give up at the op's
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
  // Writes it into the line of the other parity too, so that timeout messages name `call` as this rank's
  // last: only where no rank reads that line before the next call publishes its own (after a sync that
  // followed every read of it; kAuto's copy probe, whose own calls used both lines).
  void publish_in_both_lines(const CollectiveCall& call);
  // This rank has finished its writes for `phase`.
  void signal(std::uint64_t phase);
  // Blocks until every rank signalled `phase`; throws kTimeout at ctx.deadline.
  void wait_all(std::uint64_t phase, const OpContext& ctx) const;
  // After the first wait of `call`: throws kInvalidArgument if any rank's descriptor differs.
  void check_agreement(const CollectiveCall& call) const;

  // Where one rank's send and recv buffers of a call lie: in which shared buffer (slot) at which offset,
  // or not in one; which shared buffers that rank holds alive for the call; the call's bytes.
  struct BufferPlaces {
    static constexpr std::uint64_t kNowhere = 0;
    static std::uint64_t place(int slot, std::size_t offset) {
      return static_cast<std::uint64_t>(offset) << 8 | static_cast<std::uint64_t>(slot) << 1 | 1;
    }
    static bool placed(std::uint64_t p) { return (p & 1) != 0; }
    static int slot_of(std::uint64_t p) { return static_cast<int>((p >> 1) & 0x7f); }
    static std::size_t offset_of(std::uint64_t p) { return static_cast<std::size_t>(p >> 8); }
    std::uint64_t send = kNowhere, recv = kNowhere;
    std::uint64_t live = 0;  // bit s: shared buffer s
    std::uint64_t bytes = 0;
  };
  // Before the call's first signal.
  void publish_buffers(std::uint64_t seq, const BufferPlaces& places);
  // Rank q's places for call `seq` (after the call's first wait).
  BufferPlaces buffers(int q, std::uint64_t seq) const;

  // Where one rank's send and recv of a call lie in its own address space, and the call's bytes.
  struct Addresses {
    std::uint64_t send = 0, recv = 0, bytes = 0;
  };
  // Before the call's first signal.
  void publish_addresses(std::uint64_t seq, const Addresses& addresses);
  // Rank q's addresses for call `seq` (after the call's first wait).
  Addresses addresses(int q, std::uint64_t seq) const;

 private:
  struct alignas(64) PhaseLine {
    std::atomic<std::uint64_t> phase;    // the futex word is its low 32 bits (little-endian)
    std::atomic<std::uint32_t> waiters;  // ranks sleeping on `phase`
  };
  struct alignas(64) DescLine {
    // [parity][0] seq, [1] kind | dtype << 8 | op << 16 | (root + 1) << 32, [2] count
    std::atomic<std::uint64_t> word[2][3];
  };
  struct alignas(64) BufferLine {
    std::atomic<std::uint64_t> word[2][4];  // [parity] send, recv, live, bytes
  };
  struct alignas(64) AddressLine {
    std::atomic<std::uint64_t> word[2][3];  // [parity] send, recv, bytes
  };
  CollectiveCall read_desc(int rank, std::uint64_t seq_parity) const;
  CollectiveCall latest_desc(int rank) const;  // for timeout messages
  // Sleeps until rank q's phase reaches `phase`, the deadline passes, or a short slice ends.
  void sleep_on(int q, std::uint64_t phase, const OpContext& ctx) const;
  [[noreturn]] void throw_timeout(std::uint64_t phase, const OpContext& ctx) const;

  PhaseLine* phases_;
  DescLine* descs_;
  BufferLine* buffer_lines_;
  AddressLine* address_lines_;
  int rank_;
  int size_;
  bool oversubscribed_;  // more ranks in the segment than online CPUs: waits poll with sched_yield
};

}  // namespace mirror::coll::detail
