// value_convert.cc — label and sample conversions with their checks, dispatched over the source element type.
#include "value_convert.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "finite_check.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

constexpr double kExactIntInFloat = 16777216.0;  // 2^24: every integer up to it is exact in float32

// IEEE binary16 bits -> float (exact: every half is a float).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(man), -24);  // zero or subnormal
  } else if (exp == 31) {
    magnitude = man ? NAN : INFINITY;
  } else {
    magnitude = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &magnitude, sizeof bits);
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// Calls f(const T*) with the block viewed as its element type (float16 pre-widened into `widened`).
template <typename F>
void visit(const void* in, ElemType type, std::size_t n, std::vector<float>& widened, F&& f) {
  switch (type) {
    case ElemType::kBool: case ElemType::kUInt8: return f(static_cast<const uint8_t*>(in));
    case ElemType::kInt8: return f(static_cast<const int8_t*>(in));
    case ElemType::kInt16: return f(static_cast<const int16_t*>(in));
    case ElemType::kUInt16: return f(static_cast<const uint16_t*>(in));
    case ElemType::kInt32: return f(static_cast<const int32_t*>(in));
    case ElemType::kUInt32: return f(static_cast<const uint32_t*>(in));
    case ElemType::kInt64: return f(static_cast<const int64_t*>(in));
    case ElemType::kUInt64: return f(static_cast<const uint64_t*>(in));
    case ElemType::kFloat16: {
      widened.resize(n);
      const auto* h = static_cast<const uint16_t*>(in);
      for (std::size_t i = 0; i < n; ++i) widened[i] = half_to_float(h[i]);
      return f(static_cast<const float*>(widened.data()));
    }
    case ElemType::kFloat32: return f(static_cast<const float*>(in));
    case ElemType::kFloat64: return f(static_cast<const double*>(in));
  }
}

// 0 <= v < limit, for any integer type (no sign-compare warnings for unsigned ones).
template <typename T>
bool below(T v, uint64_t limit) {
  if constexpr (std::is_signed_v<T>) {
    if (v < 0) return false;
  }
  return static_cast<uint64_t>(v) < limit;
}

// "sample 17 feature 5 (index [0, 1, 1] of 3 x 4 x 4)".
std::string locate(const BlockWhere& where, int64_t elem, int64_t row_elems) {
  std::ostringstream os;
  const int64_t feature = elem % row_elems;
  os << where.what << ": sample " << where.first_row + elem / row_elems << " feature " << feature;
  if (where.sample_shape.size() > 1) {
    std::vector<int64_t> idx(where.sample_shape.size());
    int64_t rest = feature;
    for (std::size_t d = idx.size(); d-- > 0;) {
      idx[d] = rest % where.sample_shape[d];
      rest /= where.sample_shape[d];
    }
    os << " (index [";
    for (std::size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
    os << "] of ";
    for (std::size_t d = 0; d < idx.size(); ++d) os << (d ? " x " : "") << where.sample_shape[d];
    os << ")";
  }
  return os.str();
}

template <typename T>
void to_uint8(const T* in, std::size_t n, int64_t row_elems, const BlockWhere& where, uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const T v = in[i];
    if constexpr (std::is_floating_point_v<T>) {
      MIRROR_THROW(kInvalidArgument, where.what << ": float samples cannot be stored as uint8; use --x-dtype float32");
    } else {
      MIRROR_CHECK(below(v, 256), kFormat,
                   locate(where, static_cast<int64_t>(i), row_elems)
                       << " is " << +v << ", outside 0..255; uint8 would not hold it (use --x-dtype float32)");
      out[i] = static_cast<uint8_t>(v);
    }
  }
}

template <typename T>
void to_float(const T* in, std::size_t n, int64_t row_elems, const BlockWhere& where, float* out) {
  if constexpr (std::is_same_v<T, float>) {
    const int64_t bad = first_non_finite(in, n);
    MIRROR_CHECK(bad < 0, kFormat, locate(where, bad, row_elems) << " is " << non_finite_name(in[bad])
                                                                 << "; expected finite values");
    std::memcpy(out, in, n * sizeof(float));
  } else if constexpr (std::is_same_v<T, double>) {
    for (std::size_t i = 0; i < n; ++i) {
      const double v = in[i];
      MIRROR_CHECK(std::isfinite(v), kFormat,
                   locate(where, static_cast<int64_t>(i), row_elems) << " is " << non_finite_name(v) << "; expected finite values");
      const float f = static_cast<float>(v);  // round to nearest: the accepted float64 -> float32 rounding
      MIRROR_CHECK(std::isfinite(f), kFormat,
                   locate(where, static_cast<int64_t>(i), row_elems)
                       << " is " << v << ", beyond float32's range (+-" << FLT_MAX << "): it would become Inf");
      out[i] = f;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const T v = in[i];
      MIRROR_CHECK(static_cast<double>(v) <= kExactIntInFloat && static_cast<double>(v) >= -kExactIntInFloat, kFormat,
                   locate(where, static_cast<int64_t>(i), row_elems)
                       << " is " << +v << "; float32 holds integers exactly only up to 2^24 = 16777216");
      out[i] = static_cast<float>(v);
    }
  }
}

}  // namespace

void convert_labels(const void* in, ElemType type, int64_t n, int64_t limit, const BlockWhere& where, int32_t* out) {
  MIRROR_CHECK(!is_float(type), kFormat,
               where.what << " holds " << elem_name(type) << " labels; expected integer class ids 0..C-1 "
                             "(convert them with y.astype(np.int64) if they are whole numbers)");
  std::vector<float> unused;
  visit(in, type, static_cast<std::size_t>(n), unused, [&](const auto* p) {
    for (int64_t i = 0; i < n; ++i) {
      const auto v = p[i];
      if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(v)>>) {
        MIRROR_CHECK(below(v, static_cast<uint64_t>(limit)), kFormat,
                     where.what << ": label " << +v << " of sample " << where.first_row + i
                                << " is out of range; expected 0 <= label < " << limit);
        out[i] = static_cast<int32_t>(v);
      }
    }
  });
}

DType default_x_dtype(ElemType type) {
  return type == ElemType::kBool || type == ElemType::kUInt8 ? DType::kUInt8 : DType::kFloat32;
}

void convert_x(const void* in, ElemType type, int64_t rows, int64_t row_elems, DType target, const BlockWhere& where,
               void* out) {
  const auto n = static_cast<std::size_t>(rows * row_elems);
  std::vector<float> widened;
  visit(in, type, n, widened, [&](const auto* p) {
    if (target == DType::kUInt8) to_uint8(p, n, row_elems, where, static_cast<uint8_t*>(out));
    else to_float(p, n, row_elems, where, static_cast<float*>(out));
  });
}

void hwc_to_chw(const void* in, int64_t rows, int64_t h, int64_t w, int64_t c, std::size_t elem_bytes, void* out) {
  const auto* src = static_cast<const char*>(in);
  auto* dst = static_cast<char*>(out);
  const auto plane = static_cast<std::size_t>(h * w);
  const auto sample = plane * static_cast<std::size_t>(c) * elem_bytes;
  for (int64_t r = 0; r < rows; ++r) {
    const char* s = src + static_cast<std::size_t>(r) * sample;
    char* d = dst + static_cast<std::size_t>(r) * sample;
    for (std::size_t q = 0; q < plane; ++q) {
      for (int64_t k = 0; k < c; ++k) {
        std::memcpy(d + (static_cast<std::size_t>(k) * plane + q) * elem_bytes,
                    s + (q * static_cast<std::size_t>(c) + static_cast<std::size_t>(k)) * elem_bytes, elem_bytes);
      }
    }
  }
}

}  // namespace mirror::data
