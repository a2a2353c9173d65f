// shm_communicator.cc — ShmCommunicator: the shared-memory algorithms, sequencing, failure latch.
#include "shm_communicator.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "shm_reduce.h"

namespace mirror::coll::detail {
namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

}  // namespace

std::size_t ShmCommunicator::segment_bytes(int size) {
  return ShmControl::bytes(size) + static_cast<std::size_t>(size) * 2 * kShmSlotBytes;
}

ShmCommunicator::ShmCommunicator(std::unique_ptr<ShmSegment> segment, int rank, int size, const CommOptions& options)
    : QueuedCommunicator(rank, size, options.timeout, options.progress_thread),
      segment_(std::move(segment)),
      control_(segment_->data(), rank, size),
      data_(segment_->data() + ShmControl::bytes(size)),
      options_(options),
      staging_(options.shm_staging) {
  MIRROR_CHECK(segment_->bytes() >= segment_bytes(size), kInternal, "shared-memory segment too small");
}

ShmCommunicator::~ShmCommunicator() { stop_queue(); }

unsigned char* ShmCommunicator::slot(int q) const {
  return data_ + (static_cast<std::size_t>(q) * 2 + (use_ & 1)) * kShmSlotBytes;
}

void ShmCommunicator::run(const CollectiveCall& call, const OpContext& ctx) {
  control_.publish(call);
  first_step_ = true;
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
  const std::size_t es = dtype_size(call.type), count = call.count, bytes = count * es;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (count == 0) return step(call, ctx);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  if (bytes <= kShmSlotBytes &&
      (bytes <= kShmSmallBytes || bytes * static_cast<std::size_t>(size_) <= kShmSingleSyncReadBytes)) {
    // One copy in, one sync, everyone reduces everything.
    std::memcpy(slot(rank_), send, bytes);
    step(call, ctx);
    for (int q = 0; q < size_; ++q) srcs[q] = slot(q);
    shm_reduce(recv, nullptr, srcs.data(), size_, count, call.type, call.op, size_);
    next_use();
    return;
  }
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

void ShmCommunicator::do_broadcast(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t bytes = call.count * dtype_size(call.type);
  auto* buf = static_cast<unsigned char*>(call.recv);
  if (bytes == 0) return step(call, ctx);
  for (std::size_t off = 0; off < bytes; off += kShmSlotBytes) {
    const std::size_t len = std::min(kShmSlotBytes, bytes - off);
    if (rank_ == call.root) std::memcpy(slot(rank_), buf + off, len);
    step(call, ctx);
    if (rank_ != call.root) std::memcpy(buf + off, slot(call.root), len);
    next_use();
  }
}

void ShmCommunicator::do_allgather(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), count = call.count;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (count == 0) return step(call, ctx);
  unsigned char* own = recv + static_cast<std::size_t>(rank_) * count * es;
  if (send != own) std::memcpy(own, send, count * es);
  const std::size_t per_step = kShmSlotBytes / es;
  for (std::size_t b = 0; b < count; b += per_step) {
    const std::size_t m = std::min(per_step, count - b);
    if (size_ > 1) std::memcpy(slot(rank_), send + b * es, m * es);
    step(call, ctx);
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) std::memcpy(recv + (static_cast<std::size_t>(q) * count + b) * es, slot(q), m * es);
    }
    next_use();
  }
}

void ShmCommunicator::do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), rc = call.count;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (rc == 0) return step(call, ctx);
  std::vector<const void*> srcs(static_cast<std::size_t>(size_));
  const std::size_t per_step = kShmSlotBytes / (es * static_cast<std::size_t>(size_));
  for (std::size_t b = 0; b < rc; b += per_step) {
    const std::size_t m = std::min(per_step, rc - b);
    // Blocks the other ranks reduce go through the buffer; this rank's own block is read in place.
    for (int q = 0; q < size_; ++q) {
      if (q != rank_) std::memcpy(slot(rank_) + q * m * es, send + (q * rc + b) * es, m * es);
    }
    step(call, ctx);
    for (int q = 0; q < size_; ++q) {
      srcs[q] = q == rank_ ? static_cast<const void*>(send + (rank_ * rc + b) * es) : slot(q) + rank_ * m * es;
    }
    shm_reduce(recv + b * es, nullptr, srcs.data(), size_, m, call.type, call.op, size_);
    next_use();
  }
}

}  // namespace mirror::coll::detail
