// finite_check.h — finding NaN/Inf in float data where it is read anyway (private): the in-memory load, each
// batch read from HDF5, each block of an import. One branch-free pass over the block just read (it
// vectorises), so the check costs no second read of the data; only a block that holds a non-finite value is
// scanned again to name it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mirror::data {

// Index of the first NaN or +-Inf in p[0..n), or -1 when all are finite.
inline int64_t first_non_finite(const float* p, std::size_t n) {
  uint32_t any = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    any |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);  // exponent all ones: Inf or NaN
  }
  if (!any) return -1;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

inline const char* non_finite_name(double v) { return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"); }

}  // namespace mirror::data
