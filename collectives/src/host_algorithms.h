// host_algorithms.h — the host backend's collective algorithms, written against Transport only.
//   allreduce: recursive doubling (small messages; latency log2 n) or ring reduce-scatter + ring allgather
//              (large; bandwidth-optimal 2(n-1)/n); non-power-of-two rank counts fold the extra ranks in.
//   reduce_scatter: ring; allgather: ring; broadcast: binomial tree (small) or scatter + ring allgather
//   (large); barrier: dissemination.
// Reductions run on accumulation types only (see reduce.h); every rank gets bit-identical results, because
// each element is reduced in one order that does not depend on the receiving rank.
#pragma once

#include <cstddef>
#include <vector>

#include "mirror/coll/types.h"
#include "transport.h"

namespace mirror::coll::detail {

// Element ranges of n chunks: counts differ by at most one, the first (count % n) chunks are larger.
struct ChunkLayout {
  std::vector<std::size_t> offset;
  std::vector<std::size_t> count;
  std::size_t max_count = 0;
};
ChunkLayout even_chunks(std::size_t count, int n);

// Reusable scratch buffers (grown, never shrunk) so large collectives do not allocate on every call.
class Workspace {
 public:
  unsigned char* get(int slot, std::size_t bytes) {
    auto& b = bufs_[slot];
    if (b.size() < bytes) b.resize(bytes);
    return b.data();
  }

 private:
  std::vector<unsigned char> bufs_[3];
};

// Messages of at most this many bytes use recursive doubling for allreduce.
constexpr std::size_t kSmallAllreduceBytes = 64 * 1024;
// Broadcasts of at least this many bytes (and more than two ranks) use scatter + ring allgather.
constexpr std::size_t kLargeBroadcastBytes = 256 * 1024;

// In-place allreduce of buf (count elements of an accumulation type), kAvg divided at the end.
void allreduce(Transport& t, Workspace& ws, void* buf, std::size_t count, DataType type, ReduceOp op, const OpContext& ctx);
void allreduce_recursive_doubling(Transport& t, Workspace& ws, void* buf, std::size_t count, DataType type, ReduceOp op,
                                  const OpContext& ctx);
void allreduce_ring(Transport& t, Workspace& ws, void* buf, std::size_t count, DataType type, ReduceOp op, const OpContext& ctx);

// Ring reduce-scatter of `in` into `buf` (both laid out as `chunks`; in == buf is in place): afterwards
// chunk rank() of buf holds the reduction of every rank's chunk rank() (not yet divided for kAvg); other
// chunks of buf hold partial results, except chunk rank()-1, which is not written. `in` is only read.
void reduce_scatter_ring(Transport& t, Workspace& ws, const void* in, void* buf, const ChunkLayout& chunks,
                         DataType type, ReduceOp op, const OpContext& ctx);
// allreduce_ring reading `in` (may equal buf) and leaving the result in buf: no copy for out-of-place.
void allreduce_ring(Transport& t, Workspace& ws, const void* in, void* buf, std::size_t count, DataType type,
                    ReduceOp op, const OpContext& ctx);
// In place over buf laid out as `chunks` of elements of `elem_size` bytes: chunk rank() is this rank's;
// afterwards every chunk holds its owner's data.
void allgather_ring(Transport& t, Workspace& ws, void* buf, const ChunkLayout& chunks, std::size_t elem_size, const OpContext& ctx);

void broadcast(Transport& t, Workspace& ws, void* buf, std::size_t bytes, int root, const OpContext& ctx);
void broadcast_binomial(Transport& t, Workspace& ws, void* buf, std::size_t bytes, int root, const OpContext& ctx);
void broadcast_scatter_allgather(Transport& t, Workspace& ws, void* buf, std::size_t bytes, int root, const OpContext& ctx);

void barrier_dissemination(Transport& t, Workspace& ws, const OpContext& ctx);

}  // namespace mirror::coll::detail
