// grad_norm.cc — sum_of_squares (mirror/nn/grad_norm.h): eight double accumulators in a fixed order (they
// vectorise, and the result does not depend on the compiler's reassociation); on CUDA cuda/grad_norm_cuda.cu's
// kernel (a fixed reduction tree, so it repeats too).
#include "mirror/nn/grad_norm.h"

#include <vector>

#include "backend.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {
#if MIRROR_HAVE_CUDA
namespace detail::cuda {
double sum_of_squares(const float* x, std::int64_t n);  // cuda/grad_norm_cuda.cu
}  // namespace detail::cuda
#endif
namespace {

double sum_of_squares_cpu(const float* x, std::int64_t n) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) lanes[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
  double sum = 0.0;
  for (double lane : lanes) sum += lane;
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return sum;
}

}  // namespace

double sum_of_squares(const Device& device, const float* x, std::int64_t n) {
  if (n <= 0) return 0.0;
  if (device.is_cpu()) return sum_of_squares_cpu(x, n);
#if MIRROR_HAVE_CUDA
  return detail::cuda::sum_of_squares(x, n);
#else
  detail::require_cpu(device);
  return 0.0;
#endif
}

}  // namespace mirror::nn
