// test_finite.cc — count_non_finite against std::isfinite over every kind of float (zeros, subnormals, the
// largest finite, +-Inf, quiet and signalling NaNs, NaNs with payloads), at sizes around vector widths;
// and, where a GPU is present, the CUDA kernel against the same reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mirror/nn/finite.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {
namespace {

std::vector<float> mixed_values(std::int64_t n, unsigned seed) {
  using L = std::numeric_limits<float>;
  const float specials[] = {0.0f, -0.0f, L::denorm_min(), L::min(), L::max(), -L::max(), L::infinity(),
                            -L::infinity(), L::quiet_NaN(), L::signaling_NaN(), 1.0f, -3.5e30f};
  std::mt19937 gen(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) {
    if (gen() % 3 == 0) {
      x = specials[gen() % (sizeof(specials) / sizeof(float))];
    } else {  // any bit pattern at all: NaN payloads and every exponent
      const std::uint32_t bits = static_cast<std::uint32_t>(gen());
      std::memcpy(&x, &bits, sizeof(x));
    }
  }
  return v;
}

std::int64_t reference_count(const std::vector<float>& v) {
  std::int64_t n = 0;
  for (float x : v) n += !std::isfinite(x);
  return n;
}

TEST(Finite, CountsEveryNonFiniteValueOnTheCpu) {
  for (std::int64_t n : {0, 1, 7, 8, 9, 31, 64, 1000, 100003}) {
    const std::vector<float> v = mixed_values(n, static_cast<unsigned>(n) + 1);
    EXPECT_EQ(count_non_finite(Device{}, v.data(), n), reference_count(v)) << "n = " << n;
  }
  const std::vector<float> clean(1000, 2.5f);
  EXPECT_EQ(count_non_finite(Device{}, clean.data(), 1000), 0);
}

TEST(Finite, CudaMatchesTheReference) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const std::vector<float> v = mixed_values(300007, 5);
  const Device gpu{DeviceKind::kCuda, 0};
  Tensor t({static_cast<std::int64_t>(v.size())}, gpu);
  t.copy_from_host(v);
  EXPECT_EQ(count_non_finite(gpu, t.data(), static_cast<std::int64_t>(v.size())), reference_count(v));
}

}  // namespace
}  // namespace mirror::nn
