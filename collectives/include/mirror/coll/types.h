// mirror/coll/types.h — element types and reduction operators of the collectives, with their names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mirror::coll {

enum class DataType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64 };
enum class ReduceOp { kSum, kAvg, kMin, kMax, kProd };

// Bytes of one element.
std::size_t dtype_size(DataType type);
// "float32", "float64", "float16", "bfloat16", "int32", "int64".
const char* to_string(DataType type);
// "sum", "avg", "min", "max", "prod".
const char* to_string(ReduceOp op);
// Parse the names above (also "float", "half", "bf16", "int", "long", "double"); throws kInvalidArgument.
DataType parse_dtype(std::string_view name);
ReduceOp parse_reduce_op(std::string_view name);

}  // namespace mirror::coll
