// test_ops.cc — CPU ops against naive references: sgemm for every transpose pair with padded leading
// dimensions and alpha/beta; bias add, column sums, ReLU, fill/scale/axpy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mirror/nn/ops.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;
constexpr double kU = std::numeric_limits<float>::epsilon() / 2;  // unit roundoff of float

struct GemmCase {
  bool ta, tb;
};

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesNaiveWithinRoundingBound) {
  const auto [ta, tb] = GetParam();
  const std::int64_t m = 7, n = 13, k = 37;
  // Stored shapes: A is m x k (or k x m when transposed), padded by 3 columns; B likewise; C padded by 2.
  const std::int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, lda = a_cols + 3;
  const std::int64_t b_rows = tb ? n : k, b_cols = tb ? k : n, ldb = b_cols + 3;
  const std::int64_t ldc = n + 2;
  auto a = random_vector(a_rows * lda, 1), b = random_vector(b_rows * ldb, 2), c = random_vector(m * ldc, 3);
  for (float beta : {0.0f, 1.0f, 0.5f}) {
    std::vector<float> got = c;
    if (beta == 0.0f)
      for (auto& v : got) v = std::numeric_limits<float>::quiet_NaN();  // beta 0 must overwrite
    ops::gemm(Device{}, ta ? ops::Trans::kYes : ops::Trans::kNo, tb ? ops::Trans::kYes : ops::Trans::kNo, m, n, k,
              1.5f, a.data(), lda, b.data(), ldb, beta, got.data(), ldc);
    const auto want = testing::naive_gemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, beta, c, ldc);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        // Standard float dot-product bound: |err| <= (k+2) u (|alpha| sum|a||b| + |beta c|).
        double mag = 0;
        for (std::int64_t p = 0; p < k; ++p)
          mag += std::abs(testing::at(a, lda, ta, i, p) * testing::at(b, ldb, tb, p, j));
        const double tol = (k + 2) * kU * (1.5 * mag + std::abs(beta * c[i * ldc + j])) + 1e-30;
        ASSERT_NEAR(got[i * ldc + j], want[i * ldc + j], tol) << "beta " << beta << " at " << i << "," << j;
      }
    for (std::int64_t i = 0; i < m; ++i)  // padding columns untouched
      for (std::int64_t j = n; j < ldc; ++j)
        if (beta != 0.0f) {
          ASSERT_EQ(got[i * ldc + j], c[i * ldc + j]);
        }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmTest,
                         ::testing::Values(GemmCase{false, false}, GemmCase{false, true}, GemmCase{true, false},
                                           GemmCase{true, true}));

TEST(Ops, AddRowBias) {
  const std::int64_t rows = 5, cols = 19;
  auto y = random_vector(rows * cols, 4), bias = random_vector(cols, 5);
  auto got = y;
  ops::add_row_bias(Device{}, got.data(), bias.data(), rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) ASSERT_EQ(got[r * cols + c], y[r * cols + c] + bias[c]);
}

TEST(Ops, ColumnSumsOverwriteAndAccumulate) {
  const std::int64_t rows = 33, cols = 17;
  auto x = random_vector(rows * cols, 6);
  auto prev = random_vector(cols, 7);
  for (float beta : {0.0f, 1.0f, 0.25f}) {
    auto got = prev;
    ops::column_sums(Device{}, x.data(), rows, cols, beta, got.data());
    for (std::int64_t c = 0; c < cols; ++c) {
      double s = beta * static_cast<double>(prev[c]), mag = std::abs(s);
      for (std::int64_t r = 0; r < rows; ++r) {
        s += x[r * cols + c];
        mag += std::abs(x[r * cols + c]);
      }
      ASSERT_NEAR(got[c], s, (rows + 2) * kU * mag) << "beta " << beta << " column " << c;
    }
  }
}

TEST(Ops, ReluForwardBackward) {
  const std::int64_t n = 101;
  auto x = random_vector(n, 8), dy = random_vector(n, 9);
  x[3] = 0.0f;  // zero counts as inactive
  std::vector<float> y(n), dx(n);
  ops::relu_forward(Device{}, x.data(), y.data(), n);
  ops::relu_backward(Device{}, y.data(), dy.data(), dx.data(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
    ASSERT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0f);
  }
  auto inplace = x;  // in place is allowed
  ops::relu_forward(Device{}, inplace.data(), inplace.data(), n);
  EXPECT_EQ(inplace, y);
}

TEST(Ops, FillScaleAxpy) {
  std::vector<float> x(37), y = random_vector(37, 10);
  ops::fill(Device{}, x.data(), 37, 2.5f);
  for (float v : x) ASSERT_EQ(v, 2.5f);
  auto z = y;
  ops::scale(Device{}, z.data(), 37, -2.0f);
  for (int i = 0; i < 37; ++i) ASSERT_EQ(z[i], -2.0f * y[i]);
  ops::axpy(Device{}, 37, 0.5f, x.data(), y.data());
  for (int i = 0; i < 37; ++i) ASSERT_EQ(y[i], -0.5f * z[i] + 1.25f);
}

}  // namespace
}  // namespace mirror::nn
