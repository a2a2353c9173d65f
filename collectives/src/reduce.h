// reduce.h — the element-wise reduction kernels of the host backend and the float32 staging of 16-bit
// types (float16/bfloat16 are reduced as float32 and rounded once at the end).
//
// Integer rules: sum and prod wrap around (two's complement, no undefined behaviour); avg is the wrapped
// sum divided by the rank count with C++ integer division (truncation toward zero), e.g. avg(1, 2) == 1
// and avg(-1, -2) == -1.
#pragma once

#include <cstddef>

#include "mirror/coll/types.h"

namespace mirror::coll::detail {

// The type the host backend reduces in: float32 for float16/bfloat16, the type itself otherwise.
DataType accumulation_type(DataType type);

// dst[i] = dst[i] op src[i] for i < count; type is an accumulation type (not float16/bfloat16).
// kAvg accumulates like kSum; finish_reduction() divides.
void reduce_into(void* dst, const void* src, std::size_t count, DataType type, ReduceOp op);
// dst[i] = a[i] op b[i]; dst may equal a.
void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op);

// After the reduction of `ranks` contributions: divides by ranks for kAvg, nothing otherwise.
void finish_reduction(void* buf, std::size_t count, DataType type, ReduceOp op, int ranks);

// 16-bit staging: widen count elements of `type` (float16/bfloat16) to float32, or narrow back.
void widen_to_float(const void* in, float* out, std::size_t count, DataType type);
void narrow_from_float(const float* in, void* out, std::size_t count, DataType type);

}  // namespace mirror::coll::detail
