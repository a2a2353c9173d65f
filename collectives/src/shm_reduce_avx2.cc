// shm_reduce_avx2.cc — the AVX2 build of the shared-memory reduction kernel (this file alone is compiled
// with -mavx2, on x86 only; shm_reduce() calls it only when the CPU reports AVX2).
#include "shm_reduce.h"

#include "shm_reduce_kernels.h"

namespace mirror::coll::detail {

void shm_reduce_avx2(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                     ReduceOp op, int ranks, ReduceStores stores) {
  reduce_any(dst, dst2, srcs, nsrc, count, type, op, ranks, stores);
}

}  // namespace mirror::coll::detail
