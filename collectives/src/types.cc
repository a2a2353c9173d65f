// types.cc — sizes, names and parsing of DataType, ReduceOp and Backend.
#include "mirror/coll/types.h"

#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {

std::size_t dtype_size(DataType type) {
  switch (type) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
  }
  MIRROR_THROW(kInvalidArgument, "unknown DataType value " << static_cast<int>(type));
}

const char* to_string(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
  }
  return "unknown";
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
  }
  return "unknown";
}

DataType parse_dtype(std::string_view name) {
  if (name == "float32" || name == "float") return DataType::kFloat32;
  if (name == "float64" || name == "double") return DataType::kFloat64;
  if (name == "float16" || name == "half") return DataType::kFloat16;
  if (name == "bfloat16" || name == "bf16") return DataType::kBFloat16;
  if (name == "int32" || name == "int") return DataType::kInt32;
  if (name == "int64" || name == "long") return DataType::kInt64;
  MIRROR_THROW(kInvalidArgument, "unknown data type '" << name
                                     << "'; expected float32, float64, float16, bfloat16, int32 or int64");
}

ReduceOp parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "avg") return ReduceOp::kAvg;
  if (name == "min") return ReduceOp::kMin;
  if (name == "max") return ReduceOp::kMax;
  if (name == "prod") return ReduceOp::kProd;
  MIRROR_THROW(kInvalidArgument, "unknown reduction '" << name << "'; expected sum, avg, min, max or prod");
}

}  // namespace mirror::coll
