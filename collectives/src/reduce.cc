// reduce.cc — element-wise reduction kernels (sum/avg/min/max/prod) and 16-bit staging for the host backend.
#include "reduce.h"

#include <algorithm>
#include <cstdint>

#include "mirror/coll/half.h"
#include "mirror/error.h"
#include "wrapping_arith.h"

namespace mirror::coll::detail {
namespace {

// dst[i] = a[i] op b[i]; dst may be a (no __restrict: the in-place form is the common one).
template <typename T>
void reduce_typed(T* dst, const T* a, const T* b, std::size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      for (std::size_t i = 0; i < count; ++i) dst[i] = wrap_add(a[i], b[i]);
      return;
    case ReduceOp::kMin:
      for (std::size_t i = 0; i < count; ++i) dst[i] = std::min(a[i], b[i]);
      return;
    case ReduceOp::kMax:
      for (std::size_t i = 0; i < count; ++i) dst[i] = std::max(a[i], b[i]);
      return;
    case ReduceOp::kProd:
      for (std::size_t i = 0; i < count; ++i) dst[i] = wrap_mul(a[i], b[i]);
      return;
  }
  MIRROR_THROW(kInvalidArgument, "unknown reduction value " << static_cast<int>(op));
}

template <typename T>
void divide_typed(T* buf, std::size_t count, int ranks) {
  const T n = static_cast<T>(ranks);
  for (std::size_t i = 0; i < count; ++i) buf[i] = buf[i] / n;
}

}  // namespace

DataType accumulation_type(DataType type) {
  return (type == DataType::kFloat16 || type == DataType::kBFloat16) ? DataType::kFloat32 : type;
}

void reduce_into(void* dst, const void* src, std::size_t count, DataType type, ReduceOp op) {
  reduce(dst, dst, src, count, type, op);
}

void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kFloat32:
      return reduce_typed(static_cast<float*>(dst), static_cast<const float*>(a), static_cast<const float*>(b), count, op);
    case DataType::kFloat64:
      return reduce_typed(static_cast<double*>(dst), static_cast<const double*>(a), static_cast<const double*>(b), count,
                          op);
    case DataType::kInt32:
      return reduce_typed(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(a),
                          static_cast<const std::int32_t*>(b), count, op);
    case DataType::kInt64:
      return reduce_typed(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(a),
                          static_cast<const std::int64_t*>(b), count, op);
    case DataType::kFloat16:
    case DataType::kBFloat16: break;
  }
  MIRROR_THROW(kInternal, "reduce called with " << to_string(type) << "; 16-bit types are reduced as float32");
}

void finish_reduction(void* buf, std::size_t count, DataType type, ReduceOp op, int ranks) {
  if (op != ReduceOp::kAvg || ranks == 1) return;
  switch (type) {
    case DataType::kFloat32: return divide_typed(static_cast<float*>(buf), count, ranks);
    case DataType::kFloat64: return divide_typed(static_cast<double*>(buf), count, ranks);
    case DataType::kInt32: return divide_typed(static_cast<std::int32_t*>(buf), count, ranks);
    case DataType::kInt64: return divide_typed(static_cast<std::int64_t*>(buf), count, ranks);
    case DataType::kFloat16:
    case DataType::kBFloat16: break;
  }
  MIRROR_THROW(kInternal, "finish_reduction called with " << to_string(type));
}

void widen_to_float(const void* in, float* out, std::size_t count, DataType type) {
  const auto* h = static_cast<const std::uint16_t*>(in);
  if (type == DataType::kFloat16) return half_to_float(h, out, count);
  if (type == DataType::kBFloat16) return bfloat16_to_float(h, out, count);
  MIRROR_THROW(kInternal, "widen_to_float called with " << to_string(type));
}

void narrow_from_float(const float* in, void* out, std::size_t count, DataType type) {
  auto* h = static_cast<std::uint16_t*>(out);
  if (type == DataType::kFloat16) return float_to_half(in, h, count);
  if (type == DataType::kBFloat16) return float_to_bfloat16(in, h, count);
  MIRROR_THROW(kInternal, "narrow_from_float called with " << to_string(type));
}

}  // namespace mirror::coll::detail
