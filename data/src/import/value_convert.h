// value_convert.h — the checked conversions of an import (private), each refused with a message naming the
// array, the sample and the feature when it would lose information:
//   labels: any integer type -> int32, every label in [0, limit);
//   x -> uint8: bool/integers in 0..255;
//   x -> float32: float16/float32 as they are; float64 rounded to the nearest float32 (the rounding that
//     Keras' and PyTorch's float32 default also applies: accepted), but a value beyond float32's range (it
//     would turn into Inf) is refused; integers only when exact in float32 (|v| <= 2^24);
//   NaN and Inf refused in every float input;
//   channels-last samples (H, W, C) -> (C, H, W).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elem_type.h"
#include "mirror/data/dataset.h"

namespace mirror::data {

// Where a block of rows comes from, for messages: "split 'train' ('x.npy')", first row index, sample shape.
struct BlockWhere {
  std::string what;
  int64_t first_row = 0;
  std::vector<int64_t> sample_shape;
};

// n labels of type `type` -> int32. Throws kFormat for a non-integer type or a label outside [0, limit).
void convert_labels(const void* in, ElemType type, int64_t n, int64_t limit, const BlockWhere& where, int32_t* out);

// The dtype Mirror stores for x of `type` unless told otherwise: uint8 for bool/uint8, float32 otherwise.
DType default_x_dtype(ElemType type);

// rows x row_elems values of `type` -> `target` (uint8_t or float). Throws kFormat as described above.
void convert_x(const void* in, ElemType type, int64_t rows, int64_t row_elems, DType target, const BlockWhere& where,
               void* out);

// Transposes `rows` samples of h x w x c elements of `elem_bytes` bytes each into c x h x w.
void hwc_to_chw(const void* in, int64_t rows, int64_t h, int64_t w, int64_t c, std::size_t elem_bytes, void* out);

}  // namespace mirror::data
