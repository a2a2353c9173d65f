// shm_reduce.cc — the baseline build of the shared-memory reduction kernel and the run-time choice
// between it and the AVX2 build.
#include "shm_reduce.h"

#include "shm_reduce_kernels.h"

namespace mirror::coll::detail {
namespace {

bool use_avx2() {
#if defined(MIRROR_SHM_AVX2) && (defined(__x86_64__) || defined(__i386__))
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace

void shm_reduce_generic(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                        ReduceOp op, int ranks) {
  reduce_any(dst, dst2, srcs, nsrc, count, type, op, ranks);
}

void shm_reduce(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                ReduceOp op, int ranks) {
#ifdef MIRROR_SHM_AVX2
  if (use_avx2()) return shm_reduce_avx2(dst, dst2, srcs, nsrc, count, type, op, ranks);
#endif
  shm_reduce_generic(dst, dst2, srcs, nsrc, count, type, op, ranks);
}

const char* shm_reduce_isa() { return use_avx2() ? "avx2" : "generic"; }

}  // namespace mirror::coll::detail
