// shm_reduce.h — the shared-memory backend's reduction kernel: combines the same element range of every
// rank's slot (rank order, so every rank computes bit-identical results) in one pass, in cache-sized
// blocks. float16/bfloat16 are widened to float32, reduced and rounded once. Compiled twice: a baseline
// build and an AVX2 build (shm_reduce_avx2.cc, -mavx2), chosen at run time with __builtin_cpu_supports.
// Semantics are those of reduce.h: integer sum/prod wrap, avg divides by `ranks` (integers truncate).
// Also the streaming copy the large out-of-place allreduce writes its output with.
#pragma once

#include <cstddef>

#include "mirror/coll/types.h"

namespace mirror::coll::detail {

// dst[i] (and dst2[i] unless null) = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc-1][i], then divided by
// `ranks` for kAvg. Any type, 16-bit included. dst and dst2 may each be exactly one of the sources
// (each element is read from all sources before it is written); partial overlaps are not allowed.
// `stores` picks, per output, plain or non-temporal stores (the latter fenced before return): for an
// output that goes to memory anyway, or that another core will read and must not stay in this one's cache.
struct ReduceStores {
  bool stream_dst = false;
  bool stream_dst2 = false;
};
void shm_reduce(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                ReduceOp op, int ranks, ReduceStores stores = {});

// memcpy with non-temporal (cache-bypassing) stores on x86, ending with a store fence; plain memcpy
// elsewhere. For output that exceeds the cache: it saves the read-for-ownership of every destination line
// and leaves the cache to the staging buffers. dst and src must not overlap.
void shm_copy_streaming(void* dst, const void* src, std::size_t bytes);
// The same without the fence (many calls, then one shm_stream_fence()).
void shm_store_streaming(void* dst, const void* src, std::size_t bytes);
void shm_stream_fence();
// Evicts the cache lines of [data, data + bytes) from every cache (clflushopt, else clflush; nothing off
// x86): a rank that has read another rank's lines drops its copies, so that the owner's next writes to
// them need not invalidate them in this core's cache first.
void shm_evict_lines(const void* data, std::size_t bytes);

// "avx2" or "generic": which build of the kernel shm_reduce uses on this CPU.
const char* shm_reduce_isa();

// The two builds (same source, shm_reduce_kernels.h); shm_reduce dispatches between them.
void shm_reduce_generic(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                        ReduceOp op, int ranks, ReduceStores stores);
void shm_reduce_avx2(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                     ReduceOp op, int ranks, ReduceStores stores);

}  // namespace mirror::coll::detail
