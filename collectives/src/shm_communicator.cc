// shm_communicator.cc — ShmCommunicator: the shared-memory algorithms; its construction over a group and
// its table row.
#include "shm_communicator.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "mpi_check.h"
#include "shared_buffer.h"
#include "shm_piece.h"
#include "shm_reduce.h"

namespace mirror::coll::detail {
namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

}  // namespace

std::size_t ShmCommunicator::segment_bytes(int size) {
  return ShmControl::bytes(size) + static_cast<std::size_t>(size) * 2 * kShmSlotBytes;
}

ShmCommunicator::ShmCommunicator(std::unique_ptr<ShmSegment> segment, int rank, int size, const CommOptions& options)
    : QueuedCommunicator(shm_backend().info, rank, size, options.timeout, options.progress_thread),
      segment_(std::move(segment)),
      control_(segment_->data(), rank, size),
      data_(segment_->data() + ShmControl::bytes(size)),
      options_(options),
      staging_(options.shm_staging),
      direct_stores_(options.shm_staging),
      gather_stores_(options.shm_staging),
      single_piece_(single_piece_bytes(size, l2_cache_bytes())) {
  MIRROR_CHECK(segment_->bytes() >= segment_bytes(size), kInternal, "shared-memory segment too small");
  check_copy_probe_figures(options.shm_copy_probe_figures_for_testing);
  // In every mode (two syncs), so ranks that disagree on the mode still take the same steps.
  probe_cross_memory();
  copy_probe_pending_ = options.shm_copy == ShmCopy::kAuto && options.shm_copy_probe && cross_.permitted() && size > 1;
}

ShmCommunicator::~ShmCommunicator() { stop_queue(); }

std::unique_ptr<ShmCommunicator> ShmCommunicator::create(MPI_Comm group, const CommOptions& options,
                                                         std::string* why) {
  int rank = 0, size = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(group, &rank));
  MIRROR_CHECK_MPI(MPI_Comm_size(group, &size));
  // Setup traffic on a private communicator, so it cannot match the user's messages.
  MPI_Comm comm = MPI_COMM_NULL;
  MIRROR_CHECK_MPI(MPI_Comm_dup(group, &comm));
  std::unique_ptr<ShmSegment> segment;
  try {
    segment = ShmSegment::create(comm, segment_bytes(size), why);
  } catch (...) {
    MPI_Comm_free(&comm);
    throw;
  }
  MIRROR_CHECK_MPI(MPI_Comm_free(&comm));
  if (!segment) return nullptr;
  return std::make_unique<ShmCommunicator>(std::move(segment), rank, size, options);
}

std::vector<Statistic> ShmCommunicator::statistics() const {
  std::vector<Statistic> s{{"staging_cached", staging_calls(false)},
                           {"staging_streaming", staging_calls(true)},
                           {"direct", direct_calls_},
                           {"evicted", evicted_},
                           {"single", single_calls_},
                           {"single_permitted", cross_.permitted() ? 1u : 0u}};
  const auto probe = copy_bands_.statistic_values();
  for (std::size_t i = 0; i < probe.size(); ++i) s.push_back({kCopyProbeStatistics[i], probe[i]});
  return s;
}

unsigned char* ShmCommunicator::slot(int q, std::size_t bytes) const {
  unsigned char* buffer = data_ + (static_cast<std::size_t>(q) * 2 + (use_ & 1)) * kShmSlotBytes;
  if (bytes < kShmLaneMinBytes || bytes > kShmLaneMaxBytes) return buffer;
  const std::size_t lane = (bytes + kShmLaneAlign - 1) / kShmLaneAlign * kShmLaneAlign;
  // Uses of one buffer are every other use_: consecutive uses of a buffer take consecutive lanes.
  return buffer + (use_ >> 1) % (kShmSlotBytes / lane) * lane;
}

void ShmCommunicator::begin_call(const CollectiveCall& call) {
  control_.publish(call);
  control_.publish_addresses(call.seq, {reinterpret_cast<std::uint64_t>(call.send),
                                        reinterpret_cast<std::uint64_t>(call.recv),
                                        call.total_bytes(size_) | static_cast<std::uint64_t>(call.kind) << 56});
  first_step_ = true;
}

void ShmCommunicator::run(const CollectiveCall& call, const OpContext& ctx) {
  begin_call(call);
  switch (call.kind) {
    case CallKind::kAllreduce: do_allreduce(call, ctx); break;
    case CallKind::kBroadcast: do_broadcast(call, ctx); break;
    case CallKind::kAllgather: do_allgather(call, ctx); break;
    case CallKind::kReduceScatter: do_reduce_scatter(call, ctx); break;
    case CallKind::kBarrier: step(call, ctx); break;
  }
}

void ShmCommunicator::step(const CollectiveCall& call, const OpContext& ctx) {
  ++phase_;
  control_.signal(phase_);
  control_.wait_all(phase_, ctx);
  if (first_step_) {
    first_step_ = false;
    if (options_.check_consistency) control_.check_agreement(call);
  }
}

void ShmCommunicator::do_allreduce(const CollectiveCall& call, const OpContext& ctx) {
  if (call.count == 0) return step(call, ctx);
  // The agreement sync of shared buffers: only once any exist (then on every rank), and only where the
  // direct path would beat the single-sync one.
  const bool direct_tried = try_direct(call.count * dtype_size(call.type));
  if (direct_tried && allreduce_direct(call, ctx)) return;
  bool synced = direct_tried;
  // kAuto's copy-path probe, at the first ordinary allreduce in its range, after a first sync (so every
  // rank is in this call and probes here; shm_copy_probe.h).
  if (copy_probe_due(call)) {
    if (!synced) step(call, ctx);
    synced = true;
    probe_copy_paths(call, ctx);
  }
  // Single copy (ordinary buffers, shm_single.cc) where the mode and size say so; where the path depends on
  // the call's shape, the ranks agree after a first sync whether every rank is in place.
  if (single_copy(call)) return allreduce_single(call, ctx, synced);
  if (path_depends_on_shape(call)) {
    if (!synced) step(call, ctx);
    if (single_for_shape(call, every_rank_in_place(call))) return allreduce_single(call, ctx, true);
    return staged_allreduce(call, ctx, true);
  }
  staged_allreduce(call, ctx, synced);
}

void ShmCommunicator::staged_allreduce(const CollectiveCall& call, const OpContext& ctx, bool synced) {
  const std::size_t bytes = call.count * dtype_size(call.type);
  if (bytes <= kShmSlotBytes &&
      (bytes <= kShmSmallBytes || bytes * static_cast<std::size_t>(size_) <= kShmSingleSyncReadBytes))
    return allreduce_small(call, ctx);
  // 2 ranks, larger than a buffer: the single-sync path buffer by buffer below kShmStreamBytes, and from there
  // when every rank is in place (the published addresses, visible after a sync); otherwise the pipelined one.
  if (size_ == 2 && bytes < kShmStreamBytes) return allreduce_by_buffers(call, ctx);
  if (size_ == 2) {
    if (!synced) step(call, ctx);
    if (every_rank_in_place(call)) return allreduce_by_buffers(call, ctx);
  }
  allreduce_staged(call, ctx);
}

void ShmCommunicator::allreduce_by_buffers(const CollectiveCall& call, const OpContext& ctx) {
  // allreduce_small's step over the message one staging buffer at a time. The buffers alternate, so the next
  // piece is copied in while the other rank may still read this one. Out of place (only below
  // kShmStreamBytes) the output is written with non-temporal stores: it is not read again soon, and plain
  // stores would pay a read-for-ownership of every output line (docs/collectives-shm.md, "By buffers").
  const std::size_t per_buffer = kShmSlotBytes / dtype_size(call.type);
  const bool stream = call.send != call.recv;
  for (std::size_t first = 0; first < call.count; first += per_buffer)
    single_sync_step(call, ctx, first, std::min(per_buffer, call.count - first), stream);
  if (stream) shm_stream_fence();  // the output is visible before the call returns
}

void ShmCommunicator::allreduce_small(const CollectiveCall& call, const OpContext& ctx) {
  single_sync_step(call, ctx, 0, call.count, false);
}

void ShmCommunicator::single_sync_step(const CollectiveCall& call, const OpContext& ctx, std::size_t first,
                                       std::size_t n, bool stream_out) {
  // One copy in, one sync, everyone reduces everything: the other ranks' parts from their buffers, its own
  // from its input (the same values: the result is the same bits). It does not read its own buffer back:
  // the other ranks are reading those lines at the same time, and it would be a second stream through the
  // cache for the same bytes (docs/collectives-shm.md).
  const std::size_t es = dtype_size(call.type), bytes = n * es;
  const auto* own = static_cast<const unsigned char*>(call.send) + first * es;
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  std::memcpy(slot(rank_, bytes), own, bytes);
  step(call, ctx);
  for (int q = 0; q < size_; ++q) srcs[q] = q == rank_ ? static_cast<const void*>(own) : slot(q, bytes);
  shm_reduce(static_cast<unsigned char*>(call.recv) + first * es, nullptr, srcs.data(), size_, n, call.type, call.op,
             size_, ReduceStores{stream_out});
  next_use();
}

void ShmCommunicator::allreduce_staged(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), count = call.count, bytes = count * es;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  // Pipelined reduce-scatter + all-gather, one synchronisation per step: between syncs j-1 and j a rank
  // copies out the chunks reduced in step j-2, reduces its chunk of step j-1, and copies in step j. Each
  // rank's chunk has a fixed region in every buffer, so copying in step j (regions of the other ranks'
  // chunks) never touches what the others are still copying out of the same buffer (this rank's region).
  // Within a step the three tasks take turns in pieces of kShmInterleaveBytes, so loads from all their
  // streams are in flight together.
  const std::size_t region = kShmSlotBytes / static_cast<std::size_t>(size_) / 64 * 64;
  const std::size_t cap = region / es, per_step = cap * static_cast<std::size_t>(size_);
  const std::size_t steps = ceil_div(count, per_step);
  const std::size_t piece = std::max<std::size_t>(1, kShmInterleaveBytes / es);
  const std::uint64_t use0 = use_;
  auto buffer = [&](int q, std::size_t j) {
    return data_ + (static_cast<std::size_t>(q) * 2 + ((use0 + j) & 1)) * kShmSlotBytes;
  };
  // Elements [*lo, *hi) of the message that are elements [a, b) of rank q's chunk in step j (empty when
  // the chunk is shorter); when not empty, *lo sits `a` elements into the chunk.
  auto range = [&](std::size_t j, int q, std::size_t a, std::size_t b, std::size_t* lo, std::size_t* hi) {
    const std::size_t base = j * per_step, m = std::min(per_step, count - base);
    const std::size_t c_lo = base + std::min(static_cast<std::size_t>(q) * cap, m);
    const std::size_t c_hi = base + std::min(static_cast<std::size_t>(q + 1) * cap, m);
    *lo = std::min(c_lo + a, c_hi);
    *hi = std::min(c_lo + b, c_hi);
  };
  const std::size_t r_off = static_cast<std::size_t>(rank_) * region;
  // Out of place and larger than the cache: the output is written with non-temporal stores (no
  // read-for-ownership of recv, and recv does not evict the input and staging buffers from the cache).
  const bool stream_out = send != recv && bytes >= kShmStreamBytes;
  // Staging buffers (read by the other ranks): plain or non-temporal stores, see shm_store_policy.h.
  const bool stream_stage = staging_.streaming(bytes);
  auto store = [](bool stream, unsigned char* dst, const unsigned char* src, std::size_t n) {
    if (stream) shm_store_streaming(dst, src, n); else std::memcpy(dst, src, n);
  };
  auto copy_in = [&](std::size_t j, std::size_t a, std::size_t b) {
    for (int q = 0; q < size_; ++q) {
      std::size_t lo = 0, hi = 0;
      range(j, q, a, b, &lo, &hi);
      if (q == rank_ || hi == lo) continue;
      store(stream_stage, buffer(rank_, j) + q * region + a * es, send + lo * es, (hi - lo) * es);
    }
  };
  auto reduce_own = [&](std::size_t j, std::size_t a, std::size_t b) {
    std::size_t lo = 0, hi = 0;
    range(j, rank_, a, b, &lo, &hi);
    if (hi == lo) return;
    for (int q = 0; q < size_; ++q) srcs[q] = q == rank_ ? send + lo * es : buffer(q, j) + r_off + a * es;
    shm_reduce(buffer(rank_, j) + r_off + a * es, recv + lo * es, srcs.data(), size_, hi - lo, call.type, call.op,
               size_, ReduceStores{stream_stage, stream_out});
  };
  auto copy_out = [&](std::size_t j, std::size_t a, std::size_t b) {
    for (int q = 0; q < size_; ++q) {
      std::size_t lo = 0, hi = 0;
      range(j, q, a, b, &lo, &hi);
      if (q == rank_ || hi == lo) continue;
      store(stream_out, recv + lo * es, buffer(q, j) + q * region + a * es, (hi - lo) * es);
    }
  };
  Clock::duration work{};
  for (std::size_t j = 0; j <= steps + 1; ++j) {
    const auto start = Clock::now();
    for (std::size_t a = 0; a < cap; a += piece) {
      const std::size_t b = std::min(cap, a + piece);
      if (j >= 2) copy_out(j - 2, a, b);
      if (j >= 1 && j <= steps) reduce_own(j - 1, a, b);
      if (j < steps) copy_in(j, a, b);
    }
    // Non-temporal stores are visible before the signal (and before the call returns).
    if (stream_stage || stream_out) shm_stream_fence();
    work += Clock::now() - start;
    if (j <= steps) step(call, ctx);
  }
  staging_.record(stream_stage, bytes, std::chrono::duration_cast<std::chrono::nanoseconds>(work));
  use_ += steps;
}

bool ShmCommunicator::map_direct(const CollectiveCall& call, std::size_t send_bytes, std::size_t recv_bytes,
                                 const OpContext& ctx, DirectBuffers& out) {
  using Places = ShmControl::BufferPlaces;
  const std::size_t bytes = call.count * dtype_size(call.type);
  // Hold every live shared buffer for the whole call, so the places published stay true.
  Places mine;
  mine.bytes = bytes;
  {
    std::lock_guard<std::mutex> lock(shared_mu_);
    for (int s = 0; s < kShmSharedSlots; ++s) {
      out.held[s] = shared_[s].lock();
      if (out.held[s]) mine.live |= std::uint64_t{1} << s;
    }
  }
  for (const auto& region : out.held) {
    std::size_t off = 0;
    if (!region) continue;
    if (!Places::placed(mine.send) && region->holds(call.send, send_bytes, &off))
      mine.send = Places::place(region->slot(), off);
    if (!Places::placed(mine.recv) && region->holds(call.recv, recv_bytes, &off))
      mine.recv = Places::place(region->slot(), off);
  }
  control_.publish_buffers(call.seq, mine);
  step(call, ctx);  // every rank's send is written and its recv free; the places are visible

  // The same decision on every rank: it depends only on what all ranks published.
  std::vector<Places> all(static_cast<std::size_t>(size_));
  std::uint64_t live = ~std::uint64_t{0};
  for (int q = 0; q < size_; ++q) {
    all[q] = control_.buffers(q, call.seq);
    live &= all[q].live;
  }
  for (const Places& p : all) {
    if (!Places::placed(p.send) || !Places::placed(p.recv) || p.bytes != bytes) return false;
    if (!(live >> Places::slot_of(p.send) & 1) || !(live >> Places::slot_of(p.recv) & 1)) return false;
  }
  // Every rank's send and recv, as this rank maps them.
  out.sends.assign(static_cast<std::size_t>(size_), nullptr);
  out.recvs.assign(static_cast<std::size_t>(size_), nullptr);
  for (int q = 0; q < size_; ++q) {
    out.sends[q] = out.held[Places::slot_of(all[q].send)]->part(q) + Places::offset_of(all[q].send);
    out.recvs[q] = out.held[Places::slot_of(all[q].recv)]->part(q) + Places::offset_of(all[q].recv);
  }
  ++direct_calls_;
  return true;
}

bool ShmCommunicator::allreduce_direct(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), count = call.count, bytes = count * es;
  DirectBuffers mapped;
  if (!map_direct(call, bytes, bytes, ctx, mapped)) return false;
  const auto& sends = mapped.sends;
  const auto& recvs = mapped.recvs;

  // Rank r reduces chunk r (chunks start on 64-byte boundaries) in pieces of kShmInterleaveBytes.
  const std::size_t align = std::max<std::size_t>(1, 64 / es);
  const std::size_t chunk = ceil_div(ceil_div(count, static_cast<std::size_t>(size_)), align) * align;
  const std::size_t lo = std::min(count, static_cast<std::size_t>(rank_) * chunk);
  const std::size_t hi = std::min(count, lo + chunk);
  const std::size_t piece = std::max<std::size_t>(1, kShmInterleaveBytes / es);
  const bool stream_own = call.send != call.recv && bytes >= kShmStreamBytes;
  const bool stream_peer = direct_stores_.streaming(bytes);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  const auto start = Clock::now();
  for (std::size_t a = lo; a < hi; a += piece) {
    const std::size_t n = std::min(piece, hi - a);
    for (int q = 0; q < size_; ++q) srcs[q] = sends[q] + a * es;
    unsigned char* own = recvs[rank_] + a * es;
    if (size_ == 2) {
      shm_reduce(own, recvs[1 - rank_] + a * es, srcs.data(), size_, n, call.type, call.op, size_,
                 ReduceStores{stream_own, stream_peer});
      continue;
    }
    shm_reduce(own, nullptr, srcs.data(), size_, n, call.type, call.op, size_, ReduceStores{stream_own, false});
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      if (stream_peer) shm_store_streaming(recvs[q] + a * es, own, n * es);
      else std::memcpy(recvs[q] + a * es, own, n * es);
    }
  }
  if (stream_own || stream_peer) shm_stream_fence();
  direct_stores_.record(stream_peer, bytes,
                        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start));
  step(call, ctx);  // every rank's recv is complete
  return true;
}

bool ShmCommunicator::reduce_scatter_direct(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), block = call.count * es;
  DirectBuffers mapped;
  if (!map_direct(call, block * static_cast<std::size_t>(size_), block, ctx, mapped)) return false;
  // Rank r reduces block r of every rank's send into its own recv, nothing else: 1/n of the reads of
  // an allreduce and no writes into other ranks' memory.
  // The lines read from the other ranks stay in this core's cache, and the owners' next writes to them
  // (the next step's gradients, in training) must first invalidate them here. When the placement makes
  // that expensive (the peer-store policies found streaming stores cheaper: see shm_store_policy.h), this
  // rank evicts them itself right after reducing each piece, so the owner's writes need no invalidation.
  const bool evict = gather_stores_.streaming_cheaper(block) || direct_stores_.streaming_cheaper(block);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  const std::size_t piece = std::max<std::size_t>(1, kShmInterleaveBytes / es);
  const std::size_t own_block = static_cast<std::size_t>(rank_) * block;
  for (std::size_t a = 0; a < call.count; a += piece) {
    const std::size_t n = std::min(piece, call.count - a);
    for (int q = 0; q < size_; ++q) srcs[q] = mapped.sends[q] + own_block + a * es;
    shm_reduce(mapped.recvs[rank_] + a * es, nullptr, srcs.data(), size_, n, call.type, call.op, size_);
    for (int q = 0; q < size_ && evict; ++q)
      if (q != rank_) shm_evict_lines(srcs[q], n * es);
  }
  evicted_ += evict ? 1 : 0;
  step(call, ctx);  // every rank has read its block of every send: the sends may change again
  return true;
}

bool ShmCommunicator::allgather_direct(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), block = call.count * es;
  DirectBuffers mapped;
  if (!map_direct(call, block, block * static_cast<std::size_t>(size_), ctx, mapped)) return false;
  // Rank r writes its send into block r of every rank's recv (its own too, unless in place).
  const std::size_t own_block = static_cast<std::size_t>(rank_) * block;
  const unsigned char* send = mapped.sends[rank_];
  const bool stream_peer = gather_stores_.streaming(block);
  const auto start = Clock::now();
  for (int q = 0; q < size_; ++q) {
    unsigned char* dst = mapped.recvs[q] + own_block;
    if (dst == send) continue;
    if (q != rank_ && stream_peer) shm_store_streaming(dst, send, block);
    else std::memcpy(dst, send, block);
  }
  if (stream_peer) shm_stream_fence();
  gather_stores_.record(stream_peer, block,
                        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start));
  step(call, ctx);  // every rank's recv is complete
  return true;
}

SharedBuffer ShmCommunicator::allocate_shared(std::size_t bytes) {
  agree_shared_bytes(*this, bytes);
  if (bytes == 0) return {};
  // The lowest slot free on every rank.
  std::int64_t free_here = 0;
  {
    std::lock_guard<std::mutex> lock(shared_mu_);
    for (int s = 0; s < kShmSharedSlots; ++s)
      if (shared_[s].expired()) free_here |= std::int64_t{1} << s;
  }
  std::vector<std::int64_t> frees(static_cast<std::size_t>(size_));
  allgather(&free_here, frees.data(), 1, DataType::kInt64);
  std::uint64_t common = ~std::uint64_t{0};
  for (std::int64_t f : frees) common &= static_cast<std::uint64_t>(f);
  MIRROR_CHECK(common != 0, kInvalidArgument,
               "allocate_shared(" << bytes << " bytes): " << kShmSharedSlots
                                  << " shared buffers of this communicator are still alive on some rank; "
                                     "release one (drop every SharedBuffer copy of it) first");
  const int slot = std::countr_zero(common);
  std::shared_ptr<ShmRegion> region =
      ShmRegion::create(*this, segment_->name(), slot, shared_bytes_rounded(bytes));
  {
    std::lock_guard<std::mutex> lock(shared_mu_);
    shared_[slot] = region;
  }
  any_shared_.store(true, std::memory_order_release);
  unsigned char* mine = region->part(rank_);
  return SharedBuffer(std::shared_ptr<void>(std::move(region), mine), bytes);
}

void ShmCommunicator::do_broadcast(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t bytes = call.count * dtype_size(call.type);
  auto* buf = static_cast<unsigned char*>(call.recv);
  if (bytes == 0) return step(call, ctx);
  if (single_copy(call)) return broadcast_single(call, ctx);
  for (std::size_t off = 0; off < bytes; off += kShmSlotBytes) {
    const std::size_t len = std::min(kShmSlotBytes, bytes - off);
    if (rank_ == call.root) std::memcpy(slot(rank_, len), buf + off, len);
    step(call, ctx);
    if (rank_ != call.root) std::memcpy(buf + off, slot(call.root, len), len);
    next_use();
  }
}

void ShmCommunicator::do_allgather(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), count = call.count;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (count == 0) return step(call, ctx);
  const bool synced = try_direct(count * es * static_cast<std::size_t>(size_));
  if (synced && allgather_direct(call, ctx)) return;
  if (single_copy(call)) return allgather_single(call, ctx, synced);
  unsigned char* own = recv + static_cast<std::size_t>(rank_) * count * es;
  if (send != own) std::memcpy(own, send, count * es);
  const std::size_t per_step = kShmSlotBytes / es;
  for (std::size_t b = 0; b < count; b += per_step) {
    const std::size_t m = std::min(per_step, count - b);
    if (size_ > 1) std::memcpy(slot(rank_, m * es), send + b * es, m * es);
    step(call, ctx);
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) std::memcpy(recv + (static_cast<std::size_t>(q) * count + b) * es, slot(q, m * es), m * es);
    }
    next_use();
  }
}

void ShmCommunicator::do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), rc = call.count;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (rc == 0) return step(call, ctx);
  const bool synced = try_direct(rc * es * static_cast<std::size_t>(size_));
  if (synced && reduce_scatter_direct(call, ctx)) return;
  if (single_copy(call)) return reduce_scatter_single(call, ctx, synced);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  const std::size_t per_step = kShmSlotBytes / (es * static_cast<std::size_t>(size_));
  for (std::size_t b = 0; b < rc; b += per_step) {
    const std::size_t m = std::min(per_step, rc - b);
    // Blocks the other ranks reduce go through the buffer; this rank's own block is read in place.
    const std::size_t step_bytes = m * es * static_cast<std::size_t>(size_);
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) std::memcpy(slot(rank_, step_bytes) + q * m * es, send + (q * rc + b) * es, m * es);
    }
    step(call, ctx);
    for (int q = 0; q < size_; ++q) {
      srcs[q] = q == rank_ ? static_cast<const void*>(send + (rank_ * rc + b) * es)
                           : slot(q, step_bytes) + rank_ * m * es;
    }
    shm_reduce(recv + b * es, nullptr, srcs.data(), size_, m, call.type, call.op, size_);
    next_use();
  }
}

namespace {

bool shm_fits(const Topology& t, bool, std::string* why) {
  if (t.hosts == 1) return true;
  *why = "the " + std::to_string(t.size) + " ranks do not all share one host (" + std::to_string(t.hosts) +
         (t.fake ? " hosts faked by hosts_for_testing" : " hosts") + ", with " + t.ranks_per_host() + " ranks)";
  return false;
}

std::unique_ptr<Communicator> make_shm(const CommOptions& options, const Topology& t, std::string* why) {
  return ShmCommunicator::create(t.comm, options, why);
}

}  // namespace

const BackendRow& shm_backend() {
  static const BackendRow row{{"shm", Buffers::kHost,
                               "one shared-memory segment mapped by every rank (all ranks on one host)",
                               with_copy_probe_statistics({"staging_cached", "staging_streaming", "direct",
                                                          "evicted", "single", "single_permitted"}),
                               /*shares_allocated_buffers=*/true},
                              shm_fits, make_shm};
  return row;
}

}  // namespace mirror::coll::detail
