// test_pool_layers.cc — MaxPool2d, AvgPool2d (count_include_pad) and GlobalAvgPool2d against plain loops in
// double (forward) and central differences of those references (backward), on odd shapes: stride 2 with
// overlap, padding, non-square windows and images, batch 1, 3/5/7 channels; evaluation forward; bad input.
#include <gtest/gtest.h>

#include <limits>

#include "layer_checks.h"
#include "mirror/error.h"
#include "mirror/nn/avg_pool2d.h"
#include "mirror/nn/global_avg_pool2d.h"
#include "mirror/nn/max_pool2d.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::central_differences;
using testing::expect_close;
using testing::host_tensor;
using testing::random_vector;
using testing::to_double;
using testing::weighted;

struct PoolCase {
  std::int64_t n, c, h, w, kh, kw, sh, sw, ph, pw;
  std::int64_t oh() const { return (h + 2 * ph - kh) / sh + 1; }
  std::int64_t ow() const { return (w + 2 * pw - kw) / sw + 1; }
  Shape x_shape() const { return {n, c, h, w}; }
  Shape y_shape() const { return {n, c, oh(), ow()}; }
};

// Max (padding never wins) or sum / (kh·kw) with padded zeros counted, in double.
std::vector<double> pool_ref(const PoolCase& k, bool max, const std::vector<double>& x) {
  std::vector<double> y;
  for (std::int64_t p = 0; p < k.n * k.c; ++p)
    for (std::int64_t i = 0; i < k.oh(); ++i)
      for (std::int64_t j = 0; j < k.ow(); ++j) {
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (std::int64_t a = 0; a < k.kh; ++a)
          for (std::int64_t b = 0; b < k.kw; ++b) {
            const std::int64_t r = i * k.sh - k.ph + a, t = j * k.sw - k.pw + b;
            if (r < 0 || r >= k.h || t < 0 || t >= k.w) continue;
            const double v = x[(p * k.h + r) * k.w + t];
            acc = max ? std::max(acc, v) : acc + v;
          }
        y.push_back(max ? acc : acc / static_cast<double>(k.kh * k.kw));
      }
  return y;
}

class PoolShapes : public ::testing::TestWithParam<PoolCase> {};

void check_pool(Pool2d& layer, const PoolCase& k, bool max) {
  const auto x = random_vector(k.n * k.c * k.h * k.w, 21);
  const Tensor xt = host_tensor(x, k.x_shape());
  const Tensor& y = layer.forward(xt);
  ASSERT_EQ(y.shape(), k.y_shape());
  EXPECT_EQ(layer.output_sample_shape({k.c, k.h, k.w}), (Shape{k.c, k.oh(), k.ow()}));
  const auto want = pool_ref(k, max, to_double(x));
  expect_close(y.to_host(), want, 1e-6, "y");

  const auto r = random_vector(want.size(), 22);
  const Tensor dy = host_tensor(r, k.y_shape());
  const Tensor* dx = layer.backward(dy, GradMode::kOverwrite, true, {});
  ASSERT_NE(dx, nullptr);
  // Piecewise linear in x (max: away from ties, which distinct random floats 1e-6 apart do not have): the
  // double central difference is exact up to ~1e-10.
  expect_close(dx->to_host(),
               central_differences([&](const auto& v) { return weighted(pool_ref(k, max, v), r); }, to_double(x), 1e-7),
               1e-5, "dx");
  EXPECT_EQ(layer.backward(dy, GradMode::kOverwrite, false, {}), nullptr);

  layer.set_training(false);  // evaluation forward: same values, and no backward from it
  expect_close(layer.forward(xt).to_host(), want, 1e-6, "y (evaluation)");
  EXPECT_THROW(layer.backward(dy, GradMode::kOverwrite, true, {}), Error);
}

TEST_P(PoolShapes, MaxMatchesPlainLoopsAndFiniteDifferences) {
  const PoolCase k = GetParam();
  MaxPool2d layer(k.kh, k.kw, k.sh, k.sw, k.ph, k.pw);
  EXPECT_EQ(layer.kind(), "maxpool2d");
  EXPECT_TRUE(layer.parameter_specs().empty());
  check_pool(layer, k, true);
}

TEST_P(PoolShapes, AverageIncludingPaddingMatchesPlainLoopsAndFiniteDifferences) {
  const PoolCase k = GetParam();
  AvgPool2d layer(k.kh, k.kw, k.sh, k.sw, k.ph, k.pw);
  EXPECT_EQ(layer.kind(), "avgpool2d");
  check_pool(layer, k, false);
}

INSTANTIATE_TEST_SUITE_P(OddShapes, PoolShapes,
                         ::testing::Values(PoolCase{2, 3, 6, 6, 2, 2, 2, 2, 0, 0},   // the usual 2×2 / 2
                                           PoolCase{1, 5, 7, 9, 3, 3, 2, 2, 1, 1},   // overlapping, padded, batch 1
                                           PoolCase{3, 7, 5, 8, 3, 2, 1, 2, 1, 1},   // non-square window
                                           PoolCase{2, 3, 7, 7, 2, 2, 2, 2, 0, 0},   // odd size: last row unused
                                           PoolCase{1, 3, 9, 4, 4, 2, 3, 1, 2, 0}));  // pad = kernel / 2

TEST(Pool2d, RefusesBadInput) {
  EXPECT_THROW(MaxPool2d(0, 2, 2, 2, 0, 0), Error);
  EXPECT_THROW(MaxPool2d(2, 2, 0, 2, 0, 0), Error);
  EXPECT_THROW(AvgPool2d(2, 2, 2, 2, 2, 0), Error);  // padding > kernel / 2
  MaxPool2d pool(3, 3, 1, 1, 0, 0);
  EXPECT_THROW(pool.output_sample_shape({3, 2, 5}), Error);
  EXPECT_THROW(pool.output_sample_shape({16}), Error);
  const Tensor flat = host_tensor(std::vector<float>(12), {2, 6});
  EXPECT_THROW(pool.forward(flat), Error);
}

TEST(GlobalAvgPool2d, MeanPerChannelAndItsGradient) {
  const std::int64_t n = 3, c = 5, h = 4, w = 7;
  const auto x = random_vector(n * c * h * w, 31);
  GlobalAvgPool2d gap;
  EXPECT_EQ(gap.output_sample_shape({c, h, w}), (Shape{c}));
  EXPECT_THROW(gap.output_sample_shape({c}), Error);
  auto ref = [&](const std::vector<double>& v) {
    std::vector<double> y(n * c, 0.0);
    for (std::int64_t p = 0; p < n * c; ++p) {
      for (std::int64_t i = 0; i < h * w; ++i) y[p] += v[p * h * w + i];
      y[p] /= static_cast<double>(h * w);
    }
    return y;
  };
  const Tensor xt = host_tensor(x, {n, c, h, w});
  const Tensor& y = gap.forward(xt);
  ASSERT_EQ(y.shape(), (Shape{n, c}));
  expect_close(y.to_host(), ref(to_double(x)), 1e-6, "y");
  const auto r = random_vector(n * c, 32);
  const Tensor dy = host_tensor(r, {n, c});
  const Tensor* dx = gap.backward(dy, GradMode::kOverwrite, true, {});
  ASSERT_NE(dx, nullptr);
  expect_close(dx->to_host(), central_differences([&](const auto& v) { return weighted(ref(v), r); }, to_double(x), 1e-3),
               1e-6, "dx");
}

}  // namespace
}  // namespace mirror::nn
