// host_16bit.h — the host backend's 16-bit (float16/bfloat16) reduce-scatter and allreduce over a Transport
// that move 16-bit bytes only, yet add in float32 and round once (reduce.h's rule): each rank sends block q
// of its input straight to rank q (pairwise exchange, n - 1 steps), and rank q reduces the n contributions
// to its block in rank order in float32 (shm_reduce, which widens-and-adds each one), divides for kAvg and
// rounds once; the allreduce then ring-allgathers the rounded 16-bit blocks. Bytes per rank: 2(n-1)/n of
// the 16-bit buffer, half of the float32 ring's. Rank order (not the ring's rotating order) means every rank
// count adds in the same order as the shared-memory transport.
#pragma once

#include <cstddef>

#include "host_algorithms.h"
#include "mirror/coll/types.h"
#include "transport.h"

namespace mirror::coll::detail {

// in holds every rank's blocks (laid out as `chunks`, 16-bit elements of `type`); out receives the reduction
// of block rank() (chunks.count[rank()] elements; out may be in's block rank() exactly). Uses ws slot 2.
void reduce_scatter_16bit(Transport& t, Workspace& ws, const void* in, void* out, const ChunkLayout& chunks,
                          DataType type, ReduceOp op, const OpContext& ctx);
// In place over buf when in == buf; out of place otherwise.
void allreduce_16bit(Transport& t, Workspace& ws, const void* in, void* buf, std::size_t count, DataType type,
                     ReduceOp op, const OpContext& ctx);

}  // namespace mirror::coll::detail
