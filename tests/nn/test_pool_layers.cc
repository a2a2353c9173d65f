// test_pool_layers.cc — MaxPool2d, AvgPool2d (count_include_pad) and GlobalAvgPool2d against plain loops in
// double (forward) and central differences of those references (backward), on odd shapes: stride 2 with
// overlap, padding, non-square windows and images, batch 1, 3/5/7 channels; evaluation forward; bad input.
// Channel-blocked batches (nChw8c / nChw16c, built by tensor.h's index formula) against the NCHW path bit for
// bit: y (blocked or NCHW), dx (in x's layout), with ties among the inputs, an absorbed ReLU, and evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <ostream>

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

struct BlockedCase {
  PoolCase k;
  Layout layout;
};

void PrintTo(const BlockedCase& b, std::ostream* os) {
  const PoolCase& k = b.k;
  *os << to_string(k.x_shape()) << " " << to_string(b.layout) << " kernel " << k.kh << "x" << k.kw << " stride "
      << k.sh << "x" << k.sw << " padding " << k.ph << "x" << k.pw;
}

// Values on a coarse grid (-1, -0.75, ..., 1), so that windows hold ties (the first position in row-major order
// must win, as in the NCHW loops) and zeros (an absorbed ReLU's boundary).
std::vector<float> tied_values(std::size_t n, unsigned seed) {
  auto v = random_vector(n, seed);
  for (float& x : v) x = std::round(x * 4.0f) / 4.0f;
  return v;
}

std::unique_ptr<Pool2d> make_pool(const PoolCase& k, bool max) {
  if (max) return std::make_unique<MaxPool2d>(k.kh, k.kw, k.sh, k.sw, k.ph, k.pw);
  return std::make_unique<AvgPool2d>(k.kh, k.kw, k.sh, k.sw, k.ph, k.pw);
}

class BlockedPoolShapes : public ::testing::TestWithParam<BlockedCase> {};

// One layer fed NCHW, one fed the same batch blocked (y blocked when blocked_output, else NCHW): y and dx equal.
void check_blocked_against_nchw(const BlockedCase& bc, bool max, bool relu, bool blocked_output) {
  const PoolCase& k = bc.k;
  SCOPED_TRACE(std::string(max ? "max" : "average") + (relu ? " + relu" : "") +
               (blocked_output ? ", blocked y" : ", NCHW y") + " " + to_string(bc.layout));
  auto nchw = make_pool(k, max), blocked = make_pool(k, max);
  if (relu) {
    ASSERT_TRUE(nchw->absorb_preceding_relu());
    ASSERT_TRUE(blocked->absorb_preceding_relu());
  }
  blocked->set_blocked_output(blocked_output);
  nchw->set_blocked_output(blocked_output);  // an NCHW x gives an NCHW y whatever the model allows
  EXPECT_TRUE(blocked->accepts_blocked());
  const auto x = tied_values(k.n * k.c * k.h * k.w, 51);
  const Tensor xt = host_tensor(x, k.x_shape()), xb = testing::blocked_tensor(x, k.x_shape(), bc.layout);
  const auto r = tied_values(k.n * k.c * k.oh() * k.ow(), 52);
  const Tensor dyt = host_tensor(r, k.y_shape()), dyb = testing::blocked_tensor(r, k.y_shape(), bc.layout);
  for (int step = 0; step < 2; ++step) {  // the second step reuses the kernels and buffers
    const Tensor& want_y = nchw->forward(xt);
    EXPECT_EQ(want_y.layout(), Layout::kNchw);
    const Tensor& y = blocked->forward(xb);
    ASSERT_EQ(y.shape(), k.y_shape());
    ASSERT_EQ(y.layout(), blocked_output ? bc.layout : Layout::kNchw);
    ASSERT_EQ(testing::nchw_values(y), want_y.to_host()) << "y, step " << step;
    const Tensor* want_dx = nchw->backward(dyt, GradMode::kOverwrite, true, {});
    const Tensor* dx = blocked->backward(blocked_output ? dyb : dyt, GradMode::kOverwrite, true, {});
    ASSERT_NE(dx, nullptr);
    ASSERT_EQ(dx->layout(), bc.layout);
    ASSERT_EQ(testing::nchw_values(*dx), want_dx->to_host()) << "dx, step " << step;
  }
  nchw->set_training(false);
  blocked->set_training(false);
  const auto want = nchw->forward(xt).to_host();
  EXPECT_EQ(testing::nchw_values(blocked->forward(xb)), want) << "y (evaluation)";
}

TEST_P(BlockedPoolShapes, MaxOnBlockedBatchesEqualsTheNchwPathBitForBit) {
  for (const bool relu : {false, true})
    for (const bool blocked_output : {false, true}) check_blocked_against_nchw(GetParam(), true, relu, blocked_output);
}

TEST_P(BlockedPoolShapes, AverageOnBlockedBatchesEqualsTheNchwPathBitForBit) {
  for (const bool blocked_output : {false, true}) check_blocked_against_nchw(GetParam(), false, false, blocked_output);
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, BlockedPoolShapes,
    ::testing::Values(BlockedCase{{2, 16, 7, 9, 2, 2, 2, 2, 0, 0}, Layout::kNChw8c},    // 2×2 / 2, odd: last row, column unused
                      BlockedCase{{2, 16, 6, 6, 2, 2, 2, 2, 0, 0}, Layout::kNChw16c},   // 2×2 / 2, even
                      BlockedCase{{1, 32, 7, 7, 2, 2, 2, 2, 0, 0}, Layout::kNChw16c},   // batch 1, two blocks
                      BlockedCase{{2, 16, 13, 11, 2, 2, 2, 2, 0, 0}, Layout::kNChw16c}, // 30 pixels: 8×8 transposes
                      BlockedCase{{2, 32, 10, 12, 2, 2, 2, 2, 0, 0}, Layout::kNChw8c},  // and a tail, four blocks
                      BlockedCase{{1, 16, 7, 7, 3, 3, 2, 2, 1, 1}, Layout::kNChw8c},    // overlapping, padded
                      BlockedCase{{2, 16, 9, 5, 3, 3, 2, 2, 1, 1}, Layout::kNChw16c},
                      BlockedCase{{3, 8, 5, 8, 3, 2, 1, 2, 1, 1}, Layout::kNChw8c},     // non-square window
                      BlockedCase{{1, 16, 9, 4, 4, 2, 3, 1, 2, 0}, Layout::kNChw8c}));  // pad = kernel / 2

TEST(Pool2dBlocked, RefusesADyInAnotherLayout) {
  const PoolCase k{2, 8, 4, 4, 2, 2, 2, 2, 0, 0};
  MaxPool2d pool(2, 2, 2, 2, 0, 0);
  pool.set_blocked_output(true);
  const auto x = random_vector(k.n * k.c * k.h * k.w, 61);
  pool.forward(testing::blocked_tensor(x, k.x_shape(), Layout::kNChw8c));
  const Tensor dy = host_tensor(random_vector(k.n * k.c * k.oh() * k.ow(), 62), k.y_shape());
  EXPECT_THROW(pool.backward(dy, GradMode::kOverwrite, true, {}), Error);
}

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
