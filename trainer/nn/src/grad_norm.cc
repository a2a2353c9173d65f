// grad_norm.cc — sum_of_squares (mirror/nn/grad_norm.h): eight double accumulators in a fixed order (they
// vectorise, and the result does not depend on the compiler's reassociation). A CUDA buffer is read to the
// host first: a kernel of its own belongs to the GPU path of the language models.
#include "mirror/nn/grad_norm.h"

#include <vector>

#include "mirror/nn/tensor.h"

namespace mirror::nn {
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
  std::vector<float> host(static_cast<std::size_t>(n));
  copy_device_to_host(device, host.data(), x, host.size() * sizeof(float));
  return sum_of_squares_cpu(host.data(), n);
}

}  // namespace mirror::nn
