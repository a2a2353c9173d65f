// shm_communicator.h — ShmCommunicator: the host backend over shared memory, for ranks on one machine.
//
// Every rank owns two staging buffers (alternating between steps) of kShmSlotBytes in one segment
// (shm_segment.h) behind the synchronisation block (shm_control.h). Algorithms, pipelined in steps of at
// most one buffer so large messages need no segment as large as the message:
//   allreduce <= 64 KiB (or bytes x ranks <= 4 MiB): each rank copies its input into its buffer; one
//     sync; each rank reduces the other ranks' buffers and its own input into its output (one copy in,
//     one read of every input; a single synchronisation).
//   allreduce (larger), 2 ranks, below kShmStreamBytes or every rank in place (agreed after a first sync):
//     the single-sync steps above one buffer at a time (copy in, sync, both reduce the whole piece; out of
//     place the output streamed): one sync per buffer, the same bytes across cores as below, no copy-out,
//     so fewer syncs and copies than the pipelined path.
//   allreduce (larger, otherwise): reduce-scatter + all-gather through the buffers, pipelined with ONE sync per step:
//     each rank copies in the chunks the OTHER ranks reduce; sync; rank r reduces chunk r (its own from
//     its input, the others' from their buffers; vectorised, shm_reduce.h) into its output and its
//     buffer, and copies in the next step; sync; each rank copies the other ranks' reduced chunks out
//     (overlapped with the next reduction); out of place from kShmStreamBytes on, the output is written
//     with non-temporal stores (in the same pass that writes the reduced chunk to the own buffer).
//     Staging buffers are written with plain or non-temporal stores as StagingStorePolicy decides
//     (shm_store_policy.h: measured per rank; CommOptions::shm_staging can fix it). Per rank and message
//     byte: reads 2(n-1)/n + 1, writes 2(n-1)/n + 2/n (n = 2: 2 and 2).
//   allreduce (> 64 KiB) on shared buffers (allocate_shared, shm_region.h), once any exist: each rank
//     publishes where its send and recv lie; one sync, at which the ranks agree on the path (direct when
//     every rank's send and recv lie in shared buffers every rank holds, otherwise the staging path
//     above, one sync later); rank r reduces chunk r straight from every rank's send into every rank's
//     recv (two outputs of one kernel pass for 2 ranks; a copy from its own recv for more); one sync.
//     Per rank and message byte: reads 1, writes 1 (no staging). Writes into other ranks' recv use plain
//     or non-temporal stores as a second StagingStorePolicy decides.
//   reduce_scatter: copy the blocks other ranks need in; sync; reduce own block from every buffer.
//     On shared buffers (more than 64 KiB in all, same agreement as above): rank r reduces block r
//     straight from every rank's send into its recv, evicting the lines it read from the other ranks
//     when a peer-store policy finds cross-core invalidation expensive; one sync.
//   allgather: copy in; sync; copy every other rank's block out. On shared buffers (as reduce_scatter):
//     rank r writes its block into every rank's recv (plain or non-temporal stores, a third
//     StagingStorePolicy); one sync. broadcast: root copies in; sync; copy out.
//   barrier: one sync.
//   Single copy (ordinary buffers, shm_single.cc; CommOptions::shm_copy; kAuto: for allreduces the bands
//     its probe measured, shm_copy_probe.h, else the fixed bands below): each rank
//     publishes its send/recv addresses with the call; after the first sync the ranks move bytes straight
//     between each other's own buffers with cross-memory attach (shm_cross_memory.h: the kernel copies
//     once between the two address spaces); one final sync. Per rank and message byte (S = the
//     allreduce/broadcast buffer, the whole allgather recv / reduce_scatter send):
//       allreduce: rank r, per 1 MiB piece of chunk r, reads the piece of every other send into scratch,
//         reduces all n in rank order (the same kernel) into a scratch result and its recv, and writes the
//         result into every other recv. Memory: reads S, writes S (against reads (3n-2)/n S, writes 2 S
//         staged); the scratch stays in cache. n = 2: 2 S per rank, 4 S for the job (staged: 8 S).
//       reduce_scatter: reads S/n of each of n sends, writes S/n; allgather: reads S, writes S (one copy of
//         each other block, against two staged); broadcast: the root writes part `root` of n into every
//         other buffer while the others read the rest: (n-1)/n S per rank and direction, one copy.
//     The path is the same on every rank: it depends on the mode, the cross-memory probe (agreed at
//     start-up), kAuto's copy-path probe (timed at the first ordinary allreduce of >= 32 KiB, the slowest
//     rank's figures shared by every rank), the call's size and, for large auto allreduces, whether every
//     rank is in place (read after the first sync). Results are bit-identical to the staged paths (same kernel, same rank order).
// Results are bit-identical on every rank (each element is reduced in rank order by one kernel).
// Calls are validated by validate_call (call.h), numbered, and run in order through OpQueue (async calls
// on its progress thread: no MPI is called after construction, so any MPI thread level works). Failure
// latch as every backend (communicator_base.h): after a timeout or mismatch every later call throws,
// naming the first. The "shm" row of the backend table; also the inside-a-host part of hierarchical.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <mpi.h>

#include "backend_table.h"
#include "call.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "op_queue.h"
#include "queued_communicator.h"
#include "shm_control.h"
#include "shm_copy_probe.h"
#include "shm_cross_memory.h"
#include "shm_region.h"
#include "shm_segment.h"
#include "shm_store_policy.h"
#include "transport.h"

namespace mirror::coll::detail {

// Bytes of one staging buffer (each rank has two): the pipeline step of large collectives.
constexpr std::size_t kShmSlotBytes = std::size_t{2} << 20;
// Allreduces take the single-sync path up to 64 KiB, and while bytes x ranks (what each rank reads)
// stays within kShmSingleSyncReadBytes: fewer synchronisations matter more than the extra reads there,
// above all on a loaded machine where every synchronisation risks waiting for a descheduled rank.
constexpr std::size_t kShmSmallBytes = 64 * 1024;
constexpr std::size_t kShmSingleSyncReadBytes = std::size_t{4} << 20;
// Out-of-place allreduces of at least this many bytes write their output with non-temporal stores
// (shm_copy_streaming): input plus output then exceed a typical last-level cache, so the output would
// go to memory anyway, and streaming it saves the read-for-ownership of every output line.
constexpr std::size_t kShmStreamBytes = std::size_t{16} << 20;
// Pipelined allreduce steps interleave their copy-out, reduction and copy-in in pieces of this many
// bytes: the three tasks then overlap in the memory system, where one after the other they would not;
// much smaller pieces pay more per-piece overhead than they gain.
constexpr std::size_t kShmInterleaveBytes = 64 * 1024;
// Single-copy paths (ordinary buffers, cross-memory attach, shm_single.cc): in ShmCopy::kAuto, the bytes
// (the call's largest buffer) for which each collective takes them; outside, the staged paths. For the
// allreduce these fixed bands hold only until its copy-path probe ran, or with CommOptions::shm_copy_probe
// off (shm_copy_probe.h: which path wins depends on the machine and its placement of the cores). The bands
// (2 ranks, docs/collectives-shm.md):
// - allreduce from 64 KiB below kShmStreamBytes; from there only when every rank's call is in place (agreed
//   after the first sync): out of place the staged path streams its output and is the faster one, in place
//   single copy is. With more than 2 ranks only where the staged path is pipelined (bytes x ranks > 4 MiB):
//   below that its single-sync path, one sync against single copy's two, is ahead when ranks outnumber cores
//   and every sync may wait for a descheduled rank.
// - allgather and reduce_scatter from 512 KiB in all, broadcast from 512 KiB: below, the staged path with its
//   lanes is ahead of single copy's two kernel calls per peer (docs/collectives-shm.md, "Lanes").
constexpr std::size_t kShmSingleAllreduceBytes = 64 * 1024;
constexpr std::size_t kShmSingleGatherBytes = 512 * 1024;  // allgather (recv) and reduce_scatter (send)
constexpr std::size_t kShmSingleBroadcastBytes = 512 * 1024;
// Lanes of the staging buffers. A use of a buffer by a message of kShmLaneMinBytes..kShmLaneMaxBytes writes
// at the next lane of its size (rounded up to kShmLaneAlign bytes) after the buffer's previous use, cycling
// through the buffer, so it rewrites its lines only after the whole buffer went round, when the ranks that
// read them have long dropped them from their caches. Rewriting one place each time, every store of the copy
// would first invalidate the reader's copy of the line (docs/collectives-shm.md, "Lanes"). Smaller messages
// gain nothing from lanes and larger ones cover the buffer anyway.
constexpr std::size_t kShmLaneMinBytes = 16 * 1024;
constexpr std::size_t kShmLaneMaxBytes = 256 * 1024;
constexpr std::size_t kShmLaneAlign = 4096;
// Shared buffers (allocate_shared) alive at once, per communicator.
constexpr int kShmSharedSlots = 64;

class ShmCommunicator final : public QueuedCommunicator {
 public:
  // Segment bytes needed for `size` ranks.
  static std::size_t segment_bytes(int size);
  // Collective over `group` (its ranks must share one host). nullptr on every rank of the group, with
  // *why, when the segment cannot be made or mapped.
  static std::unique_ptr<ShmCommunicator> create(MPI_Comm group, const CommOptions& options, std::string* why);

  // Collective over the segment's ranks (the probe of cross-memory attach: two syncs).
  ShmCommunicator(std::unique_ptr<ShmSegment> segment, int rank, int size, const CommOptions& options);
  ~ShmCommunicator() override;

  // staging_cached, staging_streaming, direct, evicted, single, single_permitted, then the copy-path
  // probe's (kCopyProbeStatistics) (shm_backend().info.statistics).
  std::vector<Statistic> statistics() const override;

  // Pipelined allreduces so far that wrote staging with plain / streaming stores (read it while no call
  // is outstanding).
  std::uint64_t staging_calls(bool streamed) const { return staging_.calls(streamed); }
  // Collectives so far that took the direct path on shared buffers (same reading rule).
  std::uint64_t direct_calls() const { return direct_calls_; }
  // Direct reduce_scatters that evicted the lines they read from other ranks (same reading rule).
  std::uint64_t evicting_calls() const { return evicted_; }
  // Collectives so far that took a single-copy path (same reading rule).
  std::uint64_t single_calls() const { return single_calls_; }
  // The probe's outcome, the same on every rank.
  const CrossMemory& cross_memory() const { return cross_; }
  // kAuto's copy-path bands (not probed until the first ordinary allreduce of kCopyProbeLowestBytes).
  const CopyBands& copy_bands() const { return copy_bands_; }

  SharedBuffer allocate_shared(std::size_t bytes) override;

 private:
  void run(const CollectiveCall& call, const OpContext& ctx) override;
  void do_allreduce(const CollectiveCall& call, const OpContext& ctx);
  void allreduce_small(const CollectiveCall& call, const OpContext& ctx);
  void allreduce_staged(const CollectiveCall& call, const OpContext& ctx);
  // 2 ranks (below kShmStreamBytes, or every rank in place): allreduce_small's steps one buffer at a time.
  void allreduce_by_buffers(const CollectiveCall& call, const OpContext& ctx);
  // Elements [first, first + n) by the single-sync step: copy in, one sync, reduce every rank's part into
  // the output (non-temporal stores if `stream_out`; the caller fences).
  void single_sync_step(const CollectiveCall& call, const OpContext& ctx, std::size_t first, std::size_t n,
                        bool stream_out);
  // The staged allreduce: the single-sync path (allreduce_small), by buffers (2 ranks; from kShmStreamBytes
  // in place only: `synced` says the call's first sync is behind, so the ranks' addresses are visible) or
  // the pipelined one.
  void staged_allreduce(const CollectiveCall& call, const OpContext& ctx, bool synced);
  // Publishes `call`'s descriptor and addresses for its first step.
  void begin_call(const CollectiveCall& call);
  // Whether a call moving `bytes` in all starts with the shared-buffer agreement: only once shared
  // buffers exist (then on every rank alike), and only above kShmSmallBytes.
  bool try_direct(std::size_t bytes) const {
    return bytes > kShmSmallBytes && size_ > 1 && any_shared_.load(std::memory_order_acquire);
  }
  // Every rank's send and recv of a direct call, mapped here, and the shared buffers held meanwhile.
  struct DirectBuffers {
    std::array<std::shared_ptr<ShmRegion>, kShmSharedSlots> held;
    std::vector<const unsigned char*> sends;
    std::vector<unsigned char*> recvs;
  };
  // Publishes where this rank's send (send_bytes) and recv (recv_bytes) lie, syncs, and maps every
  // rank's; false (after the sync, on every rank alike) when some rank's do not lie in shared buffers
  // every rank holds, and the staging path must run instead.
  bool map_direct(const CollectiveCall& call, std::size_t send_bytes, std::size_t recv_bytes, const OpContext& ctx,
                  DirectBuffers& out);
  // The direct paths (map_direct, then the work, then one sync); false when the staging path must run.
  bool allreduce_direct(const CollectiveCall& call, const OpContext& ctx);
  bool reduce_scatter_direct(const CollectiveCall& call, const OpContext& ctx);
  bool allgather_direct(const CollectiveCall& call, const OpContext& ctx);
  // The start-up probe of cross-memory attach over the control block (shm_cross_memory.h), no MPI: sets
  // cross_ alike on every rank; throws kTimeout when a rank does not construct within the timeout.
  void probe_cross_memory();
  // kAuto's copy-path probe (shm_copy_probe.cc). Whether `call` runs it: the first ordinary allreduce of
  // kCopyProbeLowestBytes, where the probe is on (kAuto, cross-memory attach permitted, > 1 rank).
  bool copy_probe_due(const CollectiveCall& call) const;
  // After `at`'s first sync: times both allreduce paths (or takes the injected figures), shares the
  // slowest rank's figures with the transport's small allreduce and sets copy_bands_ alike on every rank.
  void probe_copy_paths(const CollectiveCall& at, const OpContext& ctx);
  // Times both paths at every probed size, in place and out of place; `seq`: the last call number used,
  // advanced per call.
  CopyProbeTimes measure_copy_paths(std::uint64_t& seq, const OpContext& ctx);
  CopyProbeTimes injected_copy_times() const;
  // One probe allreduce (float32 sum of `input` into `output`, in place when they are the same; call number
  // `seq`) by one path; its time on this rank.
  std::chrono::nanoseconds time_allreduce(bool single, const float* input, float* output, std::size_t count,
                                          std::uint64_t seq, const OpContext& ctx);
  // Single-copy paths (shm_single.cc). Whether `call` takes one: the same on every rank (it depends on
  // the mode, the agreed probe, the rank count and the call, all shared).
  bool single_copy(const CollectiveCall& call) const;
  // kAuto allreduces whose path depends on whether every rank's call is in place, which is known after the
  // first sync (every_rank_in_place): with the fixed bands from kShmStreamBytes on (single copy only in
  // place); probed, in the bands where the in-place and out-of-place figures chose differently.
  bool path_depends_on_shape(const CollectiveCall& call) const;
  // For such a call: whether it takes single copy, given whether every rank is in place.
  bool single_for_shape(const CollectiveCall& call, bool every_rank_in_place) const;
  bool every_rank_in_place(const CollectiveCall& call) const;
  // Every rank's published addresses for `call`, after its first sync; throws (on every rank alike)
  // when some rank's byte count differs, before any rank touches another's memory.
  std::vector<ShmControl::Addresses> peer_addresses(const CollectiveCall& call) const;
  // Each runs the call's first sync unless `synced` (a failed shared-buffer agreement already did), the
  // transfers, and one final sync after which every rank's buffers are complete and free again.
  void allreduce_single(const CollectiveCall& call, const OpContext& ctx, bool synced);
  void reduce_scatter_single(const CollectiveCall& call, const OpContext& ctx, bool synced);
  void allgather_single(const CollectiveCall& call, const OpContext& ctx, bool synced);
  void broadcast_single(const CollectiveCall& call, const OpContext& ctx);
  void do_broadcast(const CollectiveCall& call, const OpContext& ctx);
  void do_allgather(const CollectiveCall& call, const OpContext& ctx);
  void do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx);
  // Every rank has finished its writes of this step; the first step of a call also checks that all
  // ranks issued the same call.
  void step(const CollectiveCall& call, const OpContext& ctx);
  // Where rank q's staging buffer holds the current use's `bytes` (the buffers alternate with use_): at a
  // lane that moves on with every use of the buffer (kShmLaneAlign).
  unsigned char* slot(int q, std::size_t bytes) const;
  void next_use() { ++use_; }

  std::unique_ptr<ShmSegment> segment_;
  ShmControl control_;
  unsigned char* data_;  // first staging buffer
  CommOptions options_;
  // Executing thread only:
  std::uint64_t phase_ = 0;  // last phase signalled (the same on every rank)
  std::uint64_t use_ = 0;    // staging buffer uses so far (parity picks the buffer)
  bool first_step_ = false;
  StagingStorePolicy staging_;  // plain or streaming staging stores in pipelined allreduces
  StagingStorePolicy direct_stores_;  // the same for writes into other ranks' recv on the direct path
  StagingStorePolicy gather_stores_;  // and for the direct allgather's
  std::uint64_t direct_calls_ = 0;
  std::uint64_t evicted_ = 0;  // direct reduce_scatters that evicted the lines they read
  CrossMemory cross_;
  // The single-copy allreduce and reduce_scatter move and reduce their chunk in pieces of this many bytes,
  // from the L2 size (shm_piece.h): read from each peer into a scratch piece that stays in cache, reduced.
  std::size_t single_piece_;
  std::vector<unsigned char> scratch_;  // size_ pieces of single_piece_ bytes (single-copy paths)
  std::uint64_t single_calls_ = 0;
  bool copy_probe_pending_ = false;  // kAuto's copy-path probe is on and has not run yet
  CopyBands copy_bands_;             // its outcome (executing thread; read while no call is outstanding)
  // Shared buffers by slot (the same slot on every rank); the user's SharedBuffer owns them.
  std::mutex shared_mu_;
  std::array<std::weak_ptr<ShmRegion>, kShmSharedSlots> shared_;
  // Set (on every rank, by the same collective call) once a shared buffer was made: from then on,
  // large allreduces begin with the agreement sync.
  std::atomic<bool> any_shared_{false};
};

// The table row (backends.cc).
const BackendRow& shm_backend();

}  // namespace mirror::coll::detail
