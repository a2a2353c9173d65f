// wrapping_arith.h — the element operations that reductions share: sum and product that wrap around for
// integers (two's complement through the unsigned type, no undefined behaviour) and are plain for floats.
// Used by reduce.cc and by both ISA builds of shm_reduce_kernels.h. Internal linkage on purpose: the AVX2
// build's copies must never stand in for the baseline build's at link time.
#pragma once

#include <type_traits>

namespace mirror::coll::detail {
namespace {

template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

}  // namespace
}  // namespace mirror::coll::detail
