// shm_single.cc — ShmCommunicator's single-copy paths for ordinary buffers: allreduce, reduce_scatter,
// allgather and broadcast straight between the ranks' own buffers with cross-memory attach
// (shm_cross_memory.h), and the per-call choice between them and the staged paths.
//
// Every path: each rank published its send/recv addresses and the call's bytes before the first sync
// (ShmCommunicator::run); after that sync every rank's buffers are ready (sends written, recvs free);
// the transfers; a final sync, after which every recv is complete and no rank touches another's memory
// any more (so a rank may return and reuse its buffers). Waits are the bounded syncs of every path; the
// transfers themselves never wait for a peer. Reductions combine every element in rank order with the
// staged paths' kernel (shm_reduce), so every path gives the same bits.
#include <unistd.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <cstring>
#include <vector>

#include "shm_communicator.h"
#include "shm_piece.h"
#include "shm_reduce.h"

namespace mirror::coll::detail {
namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// kAuto's band of bytes per collective: [first, second).
std::pair<std::size_t, std::size_t> single_band(CallKind kind) {
  switch (kind) {
    case CallKind::kAllreduce: return {kShmSingleAllreduceBytes, kShmStreamBytes};
    case CallKind::kBroadcast: return {kShmSingleBroadcastBytes, ~std::size_t{0}};
    case CallKind::kAllgather:
    case CallKind::kReduceScatter: return {kShmSingleGatherBytes, ~std::size_t{0}};
    case CallKind::kBarrier: break;
  }
  return {~std::size_t{0}, 0};
}

}  // namespace

void ShmCommunicator::probe_cross_memory() {
  // The address lines carry the probe before any call: parity 0 the card (pid, address of the word, its
  // value), parity 1 the outcome. Call #0 rewrites parity 0 only after the second sync (every card read),
  // and call #1 parity 1 only after call #0's syncs (every outcome read).
  OpContext ctx;
  ctx.timeout = options_.timeout;
  ctx.deadline = Clock::now() + options_.timeout;
  ctx.describe = [] { return std::string("the shared-memory transport's start-up probe"); };
  auto sync = [&] {
    ++phase_;
    control_.signal(phase_);
    control_.wait_all(phase_, ctx);
  };
  volatile std::uint64_t word = std::random_device{}() | std::uint64_t{std::random_device{}()} << 32;
  control_.publish_addresses(0, {static_cast<std::uint64_t>(::getpid()),
                                 reinterpret_cast<std::uint64_t>(&word), word});
  sync();
  std::vector<pid_t> pids(static_cast<std::size_t>(size_));
  CrossMemory::Outcome mine;
  for (int q = 0; q < size_; ++q) {
    const ShmControl::Addresses card = control_.addresses(q, 0);
    pids[q] = static_cast<pid_t>(card.send);
    if (q == rank_ || mine.error != 0) continue;
    mine.error = options_.shm_copy_refused_for_testing ? CrossMemory::kRefused
                                                        : CrossMemory::read_word(pids[q], card.recv, card.bytes);
    if (mine.error != 0) mine.peer = q;
  }
  control_.publish_addresses(1, {static_cast<std::uint64_t>(mine.error), static_cast<std::uint64_t>(mine.peer), 0});
  sync();
  std::vector<CrossMemory::Outcome> all(static_cast<std::size_t>(size_));
  for (int q = 0; q < size_; ++q) {
    const ShmControl::Addresses a = control_.addresses(q, 1);
    all[q] = {static_cast<std::int64_t>(a.send), static_cast<std::int64_t>(a.recv)};
  }
  cross_ = CrossMemory(std::move(pids), all);
}

bool ShmCommunicator::single_copy(const CollectiveCall& call) const {
  if (options_.shm_copy == ShmCopy::kStaged || !cross_.permitted() || size_ < 2 || call.count == 0) return false;
  if (call.kind == CallKind::kBarrier) return false;
  if (options_.shm_copy == ShmCopy::kSingle) return true;
  const auto [lo, hi] = single_band(call.kind);
  const std::size_t bytes = call.total_bytes(size_);
  // Probed (shm_copy_probe.h): the allreduce's band takes the path the probe found faster where both shapes chose
  // alike; where they differ, path_depends_on_shape decides after the first sync.
  if (call.kind == CallKind::kAllreduce && copy_bands_.probed()) {
    const int band = CopyBands::band_of(bytes);
    return band >= 0 && copy_bands_.single(band, true) && copy_bands_.single(band, false);
  }
  // Fixed bands. More than 2 ranks: not where the staged allreduce needs a single sync (single copy needs two, and
  // with more ranks than cores every sync may wait for a descheduled rank).
  if (call.kind == CallKind::kAllreduce && size_ > 2 && bytes * static_cast<std::size_t>(size_) <= kShmSingleSyncReadBytes)
    return false;
  return bytes >= lo && bytes < hi;
}

bool ShmCommunicator::path_depends_on_shape(const CollectiveCall& call) const {
  const std::size_t bytes = call.total_bytes(size_);
  if (options_.shm_copy != ShmCopy::kAuto || !cross_.permitted() || size_ < 2 || call.kind != CallKind::kAllreduce ||
      call.count == 0)
    return false;
  if (!copy_bands_.probed()) return bytes >= kShmStreamBytes;
  const int band = CopyBands::band_of(bytes);
  return band >= 0 && copy_bands_.single(band, true) != copy_bands_.single(band, false);
}

bool ShmCommunicator::single_for_shape(const CollectiveCall& call, bool every_rank_in_place) const {
  if (!copy_bands_.probed()) return every_rank_in_place;
  return copy_bands_.single(CopyBands::band_of(call.total_bytes(size_)), every_rank_in_place);
}

bool ShmCommunicator::every_rank_in_place(const CollectiveCall& call) const {
  for (int q = 0; q < size_; ++q) {
    const ShmControl::Addresses a = control_.addresses(q, call.seq);
    if (a.send != a.recv) return false;
  }
  return true;
}

std::vector<ShmControl::Addresses> ShmCommunicator::peer_addresses(const CollectiveCall& call) const {
  std::vector<ShmControl::Addresses> all(static_cast<std::size_t>(size_));
  for (int q = 0; q < size_; ++q) all[q] = control_.addresses(q, call.seq);
  for (int q = 0; q < size_; ++q) {
    // Even with the consistency check off: no rank reads or writes past another's buffers.
    MIRROR_CHECK(all[q].bytes == all[rank_].bytes, kInvalidArgument,
                 "ranks issued mismatched collectives: rank " << q << "'s " << call.describe(size_)
                     << " moves different bytes than rank " << rank_ << "'s (single-copy path; every rank must "
                     << "issue the same collectives with the same count and type)");
  }
  return all;
}

void ShmCommunicator::allreduce_single(const CollectiveCall& call, const OpContext& ctx, bool synced) {
  // Rank r owns chunk r (64-byte aligned starts, as the direct path). Per piece of it: read the piece of
  // every other rank's send into scratch (one kernel copy each), reduce all n in rank order into its own
  // recv, then write that piece of its recv into every other rank's recv (read back while it is still in
  // cache). Out of place from kShmStreamBytes the own recv is written with streaming stores, so the
  // reduction also writes the piece to scratch in the same pass and the writes go out from there. Per
  // rank and message byte S: memory reads S (S/n own send, (n-1)S/n the others'), writes S (S/n own
  // recv, (n-1)S/n the others'); the scratch traffic stays in cache. Two syncs.
  if (!synced) step(call, ctx);
  const auto peers = peer_addresses(call);
  const std::size_t es = dtype_size(call.type), count = call.count, bytes = count * es;
  const std::size_t align = std::max<std::size_t>(1, 64 / es);
  const std::size_t chunk = ceil_div(ceil_div(count, static_cast<std::size_t>(size_)), align) * align;
  const std::size_t lo = std::min(count, static_cast<std::size_t>(rank_) * chunk);
  const std::size_t hi = std::min(count, lo + chunk);
  const std::size_t piece = std::max<std::size_t>(1, single_piece_ / es);
  const bool stream_own = call.send != call.recv && bytes >= kShmStreamBytes;
  scratch_.resize(static_cast<std::size_t>(size_) * single_piece_);
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  for (std::size_t a = lo; a < hi; a += piece) {
    const std::size_t n = std::min(piece, hi - a);
    for (int q = 0; q < size_; ++q) {
      unsigned char* mine = scratch_.data() + static_cast<std::size_t>(q) * single_piece_;
      if (q != rank_) cross_.read(q, reinterpret_cast<const unsigned char*>(peers[q].send) + a * es, mine, n * es);
      srcs[q] = q == rank_ ? send + a * es : mine;
    }
    const unsigned char* result = recv + a * es;
    if (stream_own) {
      unsigned char* copy = scratch_.data() + static_cast<std::size_t>(rank_) * single_piece_;
      shm_reduce(copy, recv + a * es, srcs.data(), size_, n, call.type, call.op, size_, ReduceStores{false, true});
      result = copy;
    } else {
      shm_reduce(recv + a * es, nullptr, srcs.data(), size_, n, call.type, call.op, size_);
    }
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) cross_.write(q, reinterpret_cast<unsigned char*>(peers[q].recv) + a * es, result, n * es);
    }
  }
  ++single_calls_;
  step(call, ctx);  // every rank's recv is complete
}

void ShmCommunicator::reduce_scatter_single(const CollectiveCall& call, const OpContext& ctx, bool synced) {
  // Rank r reduces block r: per piece, reads it from every other rank's send into scratch and reduces all
  // n (its own straight from its send) into its recv. Per rank (S = the whole send): reads S/n from each
  // of n sends, writes S/n; nothing written into another rank's memory. Two syncs.
  if (!synced) step(call, ctx);
  const auto peers = peer_addresses(call);
  const std::size_t es = dtype_size(call.type), rc = call.count;
  const std::size_t piece = std::max<std::size_t>(1, single_piece_ / es);
  const std::size_t own_block = static_cast<std::size_t>(rank_) * rc * es;
  scratch_.resize(static_cast<std::size_t>(size_) * single_piece_);
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  for (std::size_t a = 0; a < rc; a += piece) {
    const std::size_t n = std::min(piece, rc - a);
    for (int q = 0; q < size_; ++q) {
      unsigned char* mine = scratch_.data() + static_cast<std::size_t>(q) * single_piece_;
      if (q != rank_)
        cross_.read(q, reinterpret_cast<const unsigned char*>(peers[q].send) + own_block + a * es, mine, n * es);
      srcs[q] = q == rank_ ? send + own_block + a * es : mine;
    }
    shm_reduce(recv + a * es, nullptr, srcs.data(), size_, n, call.type, call.op, size_);
  }
  ++single_calls_;
  step(call, ctx);  // every rank has read its block of every send: the sends may change again
}

void ShmCommunicator::allgather_single(const CollectiveCall& call, const OpContext& ctx, bool synced) {
  // Rank r reads every other rank's send straight into that rank's block of its recv (one kernel copy
  // each) and copies its own (unless in place). Per rank (S = the whole recv): reads S, writes S. Two syncs.
  if (!synced) step(call, ctx);
  const auto peers = peer_addresses(call);
  const std::size_t block = call.count * dtype_size(call.type);
  auto* recv = static_cast<unsigned char*>(call.recv);
  for (int q = 0; q < size_; ++q) {
    unsigned char* dst = recv + static_cast<std::size_t>(q) * block;
    if (q != rank_) cross_.read(q, reinterpret_cast<const void*>(peers[q].send), dst, block);
    else if (dst != call.send) std::memcpy(dst, call.send, block);
  }
  ++single_calls_;
  step(call, ctx);  // every rank has read every send
}

void ShmCommunicator::broadcast_single(const CollectiveCall& call, const OpContext& ctx) {
  // The message in n parts (64-byte aligned starts): the root writes part `root` into every other rank's
  // buffer while each other rank reads the remaining parts from the root's, so every core copies (one
  // kernel copy each byte, the root's buffer read in place). Per non-root rank: reads and writes
  // (n-1)S/n of its own; the root reads and writes (n-1)S/n of the others'. Two syncs, however large
  // the message (the staged path syncs once per 2 MiB buffer and copies every byte twice).
  step(call, ctx);
  const auto peers = peer_addresses(call);
  const std::size_t bytes = call.count * dtype_size(call.type);
  const std::size_t part = ceil_div(ceil_div(bytes, static_cast<std::size_t>(size_)), 64) * 64;
  auto* buf = static_cast<unsigned char*>(call.recv);
  auto part_range = [&](int p, std::size_t* lo, std::size_t* hi) {
    *lo = std::min(bytes, static_cast<std::size_t>(p) * part);
    *hi = std::min(bytes, *lo + part);
  };
  std::size_t lo = 0, hi = 0;
  if (rank_ == call.root) {
    part_range(call.root, &lo, &hi);
    for (int q = 0; q < size_ && hi > lo; ++q)
      if (q != rank_) cross_.write(q, reinterpret_cast<unsigned char*>(peers[q].recv) + lo, buf + lo, hi - lo);
  } else {
    const auto* root_buf = reinterpret_cast<const unsigned char*>(peers[call.root].recv);
    for (int p = 0; p < size_; ++p) {
      part_range(p, &lo, &hi);
      if (p != call.root && hi > lo) cross_.read(call.root, root_buf + lo, buf + lo, hi - lo);
    }
  }
  ++single_calls_;
  step(call, ctx);  // every rank has its copy: the root's buffer may change again
}

}  // namespace mirror::coll::detail
