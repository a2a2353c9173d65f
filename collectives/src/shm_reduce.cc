// shm_reduce.cc — the baseline build of the shared-memory reduction kernel and the run-time choice
// between it and the AVX2 build.
#include "shm_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "shm_reduce_kernels.h"

#if defined(__x86_64__) || defined(__SSE2__)
#include <cpuid.h>
#include <emmintrin.h>
#include <immintrin.h>
#define MIRROR_SHM_STREAM 1
#endif

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
                        ReduceOp op, int ranks, ReduceStores stores) {
  reduce_any(dst, dst2, srcs, nsrc, count, type, op, ranks, stores);
}

void shm_reduce(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                ReduceOp op, int ranks, ReduceStores stores) {
#ifdef MIRROR_SHM_AVX2
  if (use_avx2()) {
    shm_reduce_avx2(dst, dst2, srcs, nsrc, count, type, op, ranks, stores);
  } else {
    shm_reduce_generic(dst, dst2, srcs, nsrc, count, type, op, ranks, stores);
  }
#else
  shm_reduce_generic(dst, dst2, srcs, nsrc, count, type, op, ranks, stores);
#endif
  if (stores.stream_dst || stores.stream_dst2) shm_stream_fence();
}

void shm_copy_streaming(void* dst, const void* src, std::size_t bytes) {
  shm_store_streaming(dst, src, bytes);
  shm_stream_fence();
}

namespace {
bool has_clflushopt() {
#ifdef MIRROR_SHM_STREAM
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 23 & 1) != 0;
#else
  return false;
#endif
}

#ifdef MIRROR_SHM_STREAM
__attribute__((target("clflushopt"))) void flush_lines_opt(const unsigned char* p, const unsigned char* end) {
  for (; p < end; p += 64) _mm_clflushopt(const_cast<unsigned char*>(p));
}
#endif
}  // namespace

void shm_evict_lines(const void* data, std::size_t bytes) {
#ifdef MIRROR_SHM_STREAM
  static const bool opt = has_clflushopt();
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* end = p + bytes;
  p -= reinterpret_cast<std::uintptr_t>(p) % 64;
  if (opt) return flush_lines_opt(p, end);
  for (; p < end; p += 64) _mm_clflush(p);
#else
  (void)data;
  (void)bytes;
#endif
}

void shm_stream_fence() {
#ifdef MIRROR_SHM_STREAM
  _mm_sfence();
#endif
}

void shm_store_streaming(void* dst, const void* src, std::size_t bytes) {
#ifdef MIRROR_SHM_STREAM
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const std::size_t head = std::min(bytes, (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

const char* shm_reduce_isa() { return use_avx2() ? "avx2" : "generic"; }

}  // namespace mirror::coll::detail
