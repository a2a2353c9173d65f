// finite.cc — count_non_finite (mirror/nn/finite.h): the CPU loop and the dispatch to the CUDA kernel.
#include "mirror/nn/finite.h"

#include <cstring>

#include "backend.h"

namespace mirror::nn {

#if MIRROR_HAVE_CUDA
namespace detail::cuda {
std::int64_t count_non_finite(const float* x, std::int64_t n);  // cuda/finite_cuda.cu
}  // namespace detail::cuda
#endif

namespace {

// A float is NaN or Inf exactly when its 8 exponent bits are all ones: then (bits & exponent) + 2^23 carries
// into the sign bit, which nothing else reaches. One and, add and or per value in 32-bit integers vectorises
// (no floating-point compare or reduction, whatever -ffast-math says about NaNs); the count is made only when
// something was found.
constexpr std::uint32_t kExponent = 0x7f800000u;

bool any_non_finite(const float* x, std::int64_t n) {
  std::uint32_t any = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof(bits));
    any |= (bits & kExponent) + 0x00800000u;
  }
  return (any & 0x80000000u) != 0;
}

std::int64_t count_non_finite_cpu(const float* x, std::int64_t n) {
  if (!any_non_finite(x, n)) return 0;
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof(bits));
    bad += (bits & kExponent) == kExponent;
  }
  return bad;
}

}  // namespace

std::int64_t count_non_finite(const Device& device, const float* x, std::int64_t n) {
  if (n <= 0) return 0;
#if MIRROR_HAVE_CUDA
  if (device.is_cuda()) return detail::cuda::count_non_finite(x, n);
#endif
  detail::require_cpu(device);
  return count_non_finite_cpu(x, n);
}

}  // namespace mirror::nn
