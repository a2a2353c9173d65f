// bench_data.cc — exact-sum inputs and their serial reference for mirror-bench.
#include "bench_data.h"

#include <cstdint>
#include <cstring>

#include "mirror/coll/half.h"

namespace mirror::bench {

using coll::DataType;
using coll::ReduceOp;

double input_value(ReduceOp op, int rank, std::size_t i, int nranks) {
  const auto k = static_cast<long long>((i * 13 + static_cast<std::size_t>(rank) * 7) % 9) - 4;  // -4..4
  switch (op) {
    case ReduceOp::kProd: {
      const auto m = (i + static_cast<std::size_t>(rank)) % 3;
      return m == 0 ? 2.0 : (m == 1 ? 1.0 : -1.0);
    }
    case ReduceOp::kAvg: return static_cast<double>(k * nranks);  // the average is an integer
    default: return static_cast<double>(k);
  }
}

double expected_value(ReduceOp op, std::size_t i, int nranks) {
  double acc = input_value(op, 0, i, nranks);
  for (int r = 1; r < nranks; ++r) {
    const double v = input_value(op, r, i, nranks);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kMin: acc = v < acc ? v : acc; break;
      case ReduceOp::kMax: acc = v > acc ? v : acc; break;
      case ReduceOp::kProd: acc *= v; break;
    }
  }
  return op == ReduceOp::kAvg ? acc / nranks : acc;
}

void store_value(void* buf, std::size_t i, DataType type, double v) {
  switch (type) {
    case DataType::kFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); return;
    case DataType::kFloat64: static_cast<double*>(buf)[i] = v; return;
    case DataType::kFloat16: static_cast<std::uint16_t*>(buf)[i] = coll::float_to_half(static_cast<float>(v)); return;
    case DataType::kBFloat16:
      static_cast<std::uint16_t*>(buf)[i] = coll::float_to_bfloat16(static_cast<float>(v));
      return;
    case DataType::kInt32: static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(v); return;
    case DataType::kInt64: static_cast<std::int64_t*>(buf)[i] = static_cast<std::int64_t>(v); return;
  }
}

double load_value(const void* buf, std::size_t i, DataType type) {
  switch (type) {
    case DataType::kFloat32: return static_cast<const float*>(buf)[i];
    case DataType::kFloat64: return static_cast<const double*>(buf)[i];
    case DataType::kFloat16: return coll::half_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DataType::kBFloat16: return coll::bfloat16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DataType::kInt32: return static_cast<const std::int32_t*>(buf)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const std::int64_t*>(buf)[i]);
  }
  return 0.0;
}

}  // namespace mirror::bench
