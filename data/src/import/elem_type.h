// elem_type.h — ElemType (private): the element types an imported array may have (NumPy's numeric dtypes,
// HDF5's integer and float classes), their sizes and names for messages.
#pragma once

#include <cstddef>

namespace mirror::data {

enum class ElemType { kBool, kInt8, kUInt8, kInt16, kUInt16, kInt32, kUInt32, kInt64, kUInt64, kFloat16, kFloat32, kFloat64 };

inline std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::kBool: case ElemType::kInt8: case ElemType::kUInt8: return 1;
    case ElemType::kInt16: case ElemType::kUInt16: case ElemType::kFloat16: return 2;
    case ElemType::kInt32: case ElemType::kUInt32: case ElemType::kFloat32: return 4;
    case ElemType::kInt64: case ElemType::kUInt64: case ElemType::kFloat64: return 8;
  }
  return 0;
}

// NumPy's names ("int64", "float32", ...), as a user knows them.
inline const char* elem_name(ElemType t) {
  switch (t) {
    case ElemType::kBool: return "bool";
    case ElemType::kInt8: return "int8";
    case ElemType::kUInt8: return "uint8";
    case ElemType::kInt16: return "int16";
    case ElemType::kUInt16: return "uint16";
    case ElemType::kInt32: return "int32";
    case ElemType::kUInt32: return "uint32";
    case ElemType::kInt64: return "int64";
    case ElemType::kUInt64: return "uint64";
    case ElemType::kFloat16: return "float16";
    case ElemType::kFloat32: return "float32";
    case ElemType::kFloat64: return "float64";
  }
  return "?";
}

inline bool is_float(ElemType t) { return t == ElemType::kFloat16 || t == ElemType::kFloat32 || t == ElemType::kFloat64; }

}  // namespace mirror::data
