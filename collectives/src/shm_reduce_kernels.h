// shm_reduce_kernels.h — the body of the shared-memory reduction kernel, included by exactly two files
// (shm_reduce.cc: baseline ISA; shm_reduce_avx2.cc: -mavx2). Everything here has internal linkage, so the
// two builds never get mixed by the linker. Loops are plain, so -O3 vectorises them: __restrict-qualified
// into the block accumulator, and MIRROR_IVDEP (no dependence between iterations) where an output may be
// an input index for index. Results do not depend on the ISA or on the store flags: the same operations in
// the same order on every path, and no FMA contraction (ISO C++ mode: -ffp-contract=off; the only two
// operations in one expression, avg's combine then divide, are rounded one after the other).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mirror/coll/half.h"
#include "mirror/coll/types.h"
#include "mirror/error.h"
#include "shm_reduce.h"
#include "wrapping_arith.h"

// A loop whose output may be one of its inputs index for index has no dependence between iterations; say
// so, so that the compiler vectorises it without a run-time alias check that such a call would fail.
#if defined(__clang__)
#define MIRROR_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define MIRROR_IVDEP _Pragma("GCC ivdep")
#else
#define MIRROR_IVDEP
#endif

namespace mirror::coll::detail {
namespace {

constexpr std::size_t kKernelBlock = 2048;  // elements per block: the accumulator stays in L1

template <typename T>
struct AddOp {
  T operator()(T a, T b) const { return wrap_add(a, b); }
};
template <typename T>
struct MulOp {
  T operator()(T a, T b) const { return wrap_mul(a, b); }
};
template <typename T>
struct MinOp {
  T operator()(T a, T b) const { return std::min(a, b); }
};
template <typename T>
struct MaxOp {
  T operator()(T a, T b) const { return std::max(a, b); }
};

template <typename T, typename F>
inline void combine_into(T* __restrict acc, const T* __restrict s, std::size_t n, F f) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = f(acc[i], s[i]);
}
// Two sources combined into `out`: a block's last combine straight into a plain output (so the block is not
// stored twice, into the accumulator and out), or its first into the accumulator. `out` may be the same
// array as `a` or `b`, index for index (an in-place call reduces its own part from its input): hence no
// __restrict, and MIRROR_IVDEP.
template <typename T, typename F>
inline void combine2_out(T* out, const T* a, const T* b, std::size_t n, F f) {
  MIRROR_IVDEP
  for (std::size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}
// The same into two plain outputs (the pipelined path's own buffer and output).
template <typename T, typename F>
inline void combine2_out2(T* out, T* out2, const T* a, const T* b, std::size_t n, F f) {
  MIRROR_IVDEP
  for (std::size_t i = 0; i < n; ++i) {
    const T v = f(a[i], b[i]);
    out[i] = v;
    out2[i] = v;
  }
}
// The last combine of a block, written to the plain output(s).
template <typename T, typename F>
inline void combine_last(T* out, T* out2, const T* a, const T* b, std::size_t n, F f) {
  if (out2 == nullptr) combine2_out(out, a, b, n, f); else combine2_out2(out, out2, a, b, n, f);
}
// Whether every output there is takes plain stores (then a kernel may write them straight from registers).
inline bool plain_outputs(const void* dst2, ReduceStores st) {
  return !st.stream_dst && (dst2 == nullptr || !st.stream_dst2);
}
// One output block: plain stores, or non-temporal ones (unfenced; shm_reduce fences once at the end).
inline void store_block(void* dst, const void* block, std::size_t bytes, bool stream) {
  if (stream) shm_store_streaming(dst, block, bytes); else std::memcpy(dst, block, bytes);
}

template <typename T>
inline void divide(T* __restrict acc, std::size_t n, int ranks) {
  const T d = static_cast<T>(ranks);
  for (std::size_t i = 0; i < n; ++i) acc[i] = acc[i] / d;
}

// Same-width types, block by block: the sources combined in rank order (then avg's division), straight into
// plain outputs, or into the block accumulator that streamed outputs are copied from. Both take the first
// combine from combine2_out, the same source expression, whichever stores a rank's outputs get (which
// payload a NaN + NaN keeps follows the operand order the compiler picks for it).
template <typename T, typename F>
void reduce_typed(T* dst, T* dst2, const void* const* srcs, int nsrc, std::size_t count, F f, bool avg, int ranks,
                  ReduceStores st) {
  alignas(64) T acc[kKernelBlock];
  // Plain outputs: the last combine (and avg's division after it, in the same order) writes them itself.
  const bool last_into_dst = nsrc >= 2 && plain_outputs(dst2, st);
  const int folded = last_into_dst ? nsrc - 1 : nsrc;  // the sources combined before the outputs are written
  const bool divide_last = avg && ranks > 1;
  const T d = static_cast<T>(ranks);
  const auto combine_divide = [f, d](T x, T y) { return f(x, y) / d; };
  for (std::size_t b = 0; b < count; b += kKernelBlock) {
    const std::size_t n = std::min(kKernelBlock, count - b);
    auto src = [srcs, b](int k) { return static_cast<const T*>(srcs[k]) + b; };
    const T* first = src(0);
    if (folded >= 2) {
      combine2_out(acc, src(0), src(1), n, f);
      for (int k = 2; k < folded; ++k) combine_into(acc, src(k), n, f);
      first = acc;
    }
    if (last_into_dst) {
      T* out2 = dst2 == nullptr ? nullptr : dst2 + b;
      if (divide_last) combine_last(dst + b, out2, first, src(nsrc - 1), n, combine_divide);
      else combine_last(dst + b, out2, first, src(nsrc - 1), n, f);
      continue;
    }
    if (folded == 1) std::memcpy(acc, first, n * sizeof(T));
    if (divide_last) divide(acc, n, ranks);
    store_block(dst + b, acc, n * sizeof(T), st.stream_dst);
    if (dst2 != nullptr) store_block(dst2 + b, acc, n * sizeof(T), st.stream_dst2);
  }
}

// A 16-bit sum or average of 2 sources: coll/half.h's add2 in one pass (widen both, add, divide, round, the
// blocked path's operations in its order), straight into plain outputs, else block by block into a local
// block that the streamed output(s) are copied from. Every 2-source sum takes this one kernel, so which
// payload a NaN + NaN keeps does not depend on a rank's store flags.
inline void add2_16bit(std::uint16_t* dst, std::uint16_t* dst2, const void* const* srcs, std::size_t count, bool half,
                       float divisor, ReduceStores st) {
  const auto* a = static_cast<const std::uint16_t*>(srcs[0]);
  const auto* b = static_cast<const std::uint16_t*>(srcs[1]);
  const auto add2 = half ? half_add2 : bfloat16_add2;
  if (plain_outputs(dst2, st)) return add2(a, b, dst, dst2, count, divisor);
  alignas(64) std::uint16_t out[kKernelBlock];
  for (std::size_t i = 0; i < count; i += kKernelBlock) {
    const std::size_t n = std::min(kKernelBlock, count - i);
    add2(a + i, b + i, out, nullptr, n, divisor);
    store_block(dst + i, out, n * sizeof(std::uint16_t), st.stream_dst);
    if (dst2 != nullptr) store_block(dst2 + i, out, n * sizeof(std::uint16_t), st.stream_dst2);
  }
}

// 16-bit types: widen each source block to float32, reduce, round once.
template <typename F>
void reduce_16bit(std::uint16_t* dst, std::uint16_t* dst2, const void* const* srcs, int nsrc, std::size_t count,
                  DataType type, F f, bool avg, int ranks, ReduceStores st) {
  const bool half = type == DataType::kFloat16;
  if constexpr (std::is_same_v<F, AddOp<float>>) {
    if (nsrc == 2) return add2_16bit(dst, dst2, srcs, count, half, avg && ranks > 1 ? static_cast<float>(ranks) : 1.0f, st);
  }
  alignas(64) float acc[kKernelBlock];
  alignas(64) float tmp[kKernelBlock];
  alignas(64) std::uint16_t out[kKernelBlock];
  auto widen = [half](const std::uint16_t* in, float* o, std::size_t n) {
    if (half) half_to_float(in, o, n); else bfloat16_to_float(in, o, n);
  };
  for (std::size_t b = 0; b < count; b += kKernelBlock) {
    const std::size_t n = std::min(kKernelBlock, count - b);
    widen(static_cast<const std::uint16_t*>(srcs[0]) + b, acc, n);
    for (int k = 1; k < nsrc; ++k) {
      const auto* src = static_cast<const std::uint16_t*>(srcs[k]) + b;
      if constexpr (std::is_same_v<F, AddOp<float>>) {  // sum/avg: widen and add in one pass (coll/half.h)
        if (half) half_accumulate(src, acc, n); else bfloat16_accumulate(src, acc, n);
        continue;
      }
      widen(src, tmp, n);
      combine_into(acc, tmp, n, f);
    }
    if (avg && ranks > 1) divide(acc, n, ranks);
    if (!st.stream_dst && dst2 == nullptr) {  // one plain output: round straight into it (sources all read)
      if (half) float_to_half(acc, dst + b, n); else float_to_bfloat16(acc, dst + b, n);
      continue;
    }
    if (half) float_to_half(acc, out, n); else float_to_bfloat16(acc, out, n);
    store_block(dst + b, out, n * sizeof(std::uint16_t), st.stream_dst);
    if (dst2 != nullptr) store_block(dst2 + b, out, n * sizeof(std::uint16_t), st.stream_dst2);
  }
}

template <typename T>
void reduce_dispatch_op(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, ReduceOp op,
                        int ranks, ReduceStores s2) {
  auto* d = static_cast<T*>(dst);
  auto* d2 = static_cast<T*>(dst2);
  switch (op) {
    case ReduceOp::kSum: return reduce_typed(d, d2, srcs, nsrc, count, AddOp<T>{}, false, ranks, s2);
    case ReduceOp::kAvg: return reduce_typed(d, d2, srcs, nsrc, count, AddOp<T>{}, true, ranks, s2);
    case ReduceOp::kMin: return reduce_typed(d, d2, srcs, nsrc, count, MinOp<T>{}, false, ranks, s2);
    case ReduceOp::kMax: return reduce_typed(d, d2, srcs, nsrc, count, MaxOp<T>{}, false, ranks, s2);
    case ReduceOp::kProd: return reduce_typed(d, d2, srcs, nsrc, count, MulOp<T>{}, false, ranks, s2);
  }
  MIRROR_THROW(kInvalidArgument, "unknown reduction value " << static_cast<int>(op));
}

void reduce_dispatch_16bit(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                           ReduceOp op, int ranks, ReduceStores s2) {
  auto* d = static_cast<std::uint16_t*>(dst);
  auto* d2 = static_cast<std::uint16_t*>(dst2);
  switch (op) {
    case ReduceOp::kSum: return reduce_16bit(d, d2, srcs, nsrc, count, type, AddOp<float>{}, false, ranks, s2);
    case ReduceOp::kAvg: return reduce_16bit(d, d2, srcs, nsrc, count, type, AddOp<float>{}, true, ranks, s2);
    case ReduceOp::kMin: return reduce_16bit(d, d2, srcs, nsrc, count, type, MinOp<float>{}, false, ranks, s2);
    case ReduceOp::kMax: return reduce_16bit(d, d2, srcs, nsrc, count, type, MaxOp<float>{}, false, ranks, s2);
    case ReduceOp::kProd: return reduce_16bit(d, d2, srcs, nsrc, count, type, MulOp<float>{}, false, ranks, s2);
  }
  MIRROR_THROW(kInvalidArgument, "unknown reduction value " << static_cast<int>(op));
}

void reduce_any(void* dst, void* dst2, const void* const* srcs, int nsrc, std::size_t count, DataType type,
                ReduceOp op, int ranks, ReduceStores s2) {
  switch (type) {
    case DataType::kFloat32: return reduce_dispatch_op<float>(dst, dst2, srcs, nsrc, count, op, ranks, s2);
    case DataType::kFloat64: return reduce_dispatch_op<double>(dst, dst2, srcs, nsrc, count, op, ranks, s2);
    case DataType::kInt32: return reduce_dispatch_op<std::int32_t>(dst, dst2, srcs, nsrc, count, op, ranks, s2);
    case DataType::kInt64: return reduce_dispatch_op<std::int64_t>(dst, dst2, srcs, nsrc, count, op, ranks, s2);
    case DataType::kFloat16:
    case DataType::kBFloat16: return reduce_dispatch_16bit(dst, dst2, srcs, nsrc, count, type, op, ranks, s2);
  }
  MIRROR_THROW(kInvalidArgument, "unknown data type value " << static_cast<int>(type));
}

}  // namespace
}  // namespace mirror::coll::detail
