// test_loss.cc — softmax cross-entropy: values and counts against a double-precision naive reference,
// dlogits against central finite differences of that reference, stability with huge logits, the
// 1/batch scaling that makes N ranks × B equal one rank × N·B, and label errors; per-token logits [N, T, C]
// with targets [N, T] (an int32 tensor), and an ignore index that leaves targets out of loss, gradient and count;
// the gradient written over the logits equal to the one written apart.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/ops.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

TEST(SoftmaxCrossEntropy, LossCountsAndGradientMatchReference) {
  const std::int64_t rows = 6, cols = 5;
  auto z = random_vector(rows * cols, 21, -3.0f, 3.0f);
  const std::vector<std::int32_t> labels = {0, 4, 2, 2, 1, 3};
  Tensor logits({rows, cols}, Device{});
  logits.copy_from_host(z);
  SoftmaxCrossEntropy loss(Device{});
  Tensor dlogits;
  const LossStats s = loss.forward_backward(logits, labels, dlogits);

  double want = 0;
  std::int64_t correct = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> zr(z.begin() + r * cols, z.begin() + (r + 1) * cols);
    want += testing::naive_xent(zr.data(), cols, labels[r]);
    std::int64_t arg = 0;
    for (std::int64_t c = 1; c < cols; ++c)
      if (zr[c] > zr[arg]) arg = c;
    correct += arg == labels[r];
  }
  EXPECT_EQ(s.count, rows);
  EXPECT_EQ(s.correct, correct);
  EXPECT_NEAR(s.loss_sum, want, 1e-5 * rows);  // per row: a few float roundings of values ~1
  EXPECT_NEAR(s.mean_loss(), want / rows, 1e-5);
  EXPECT_EQ(loss.forward(logits, labels).loss_sum, s.loss_sum);

  // d(mean loss)/dz by central differences of the double reference (h = 1e-5, truncation ~h² ≈ 1e-10).
  ASSERT_EQ(dlogits.shape(), (Shape{rows, cols}));
  const auto g = dlogits.to_host();
  auto mean_loss = [&](const std::vector<double>& zz) {
    double t = 0;
    for (std::int64_t r = 0; r < rows; ++r) t += testing::naive_xent(zz.data() + r * cols, cols, labels[r]);
    return t / rows;
  };
  std::vector<double> zd(z.begin(), z.end());
  for (std::size_t i = 0; i < zd.size(); ++i) {
    const double saved = zd[i], h = 1e-5;
    zd[i] = saved + h;
    const double up = mean_loss(zd);
    zd[i] = saved - h;
    const double down = mean_loss(zd);
    zd[i] = saved;
    ASSERT_NEAR(g[i], (up - down) / (2 * h), 1e-6) << "logit " << i;  // float gradient ~1/rows, ~1e-8 rounding
  }
}

TEST(SoftmaxCrossEntropy, StableForHugeLogits) {
  const std::vector<float> z = {1e4f, -1e4f, 0.0f, 3e4f, 3e4f - 2.0f, -5.0f};
  const std::vector<std::int32_t> labels = {1, 0};
  Tensor logits({2, 3}, Device{});
  logits.copy_from_host(z);
  SoftmaxCrossEntropy loss(Device{});
  Tensor d;
  const LossStats s = loss.forward_backward(logits, labels, d);
  // Row 0: -log softmax = 2e4 exactly (the other terms vanish); row 1: log(1 + e^-2 + e^-30005) ≈ log(1 + e^-2).
  EXPECT_TRUE(std::isfinite(s.loss_sum));
  EXPECT_NEAR(s.loss_sum, 2e4 + std::log1p(std::exp(-2.0)), 1e-2);
  EXPECT_EQ(s.correct, 1);
  for (float v : d.to_host()) EXPECT_TRUE(std::isfinite(v));
}

TEST(SoftmaxCrossEntropy, GradientScalesByBatchOrDivisor) {
  // Two "ranks" with batch 2 each, averaged, equal one rank with the concatenated batch of 4.
  const std::int64_t cols = 4;
  auto z = random_vector(4 * cols, 22);
  const std::vector<std::int32_t> y = {3, 0, 1, 1};
  SoftmaxCrossEntropy loss(Device{});
  Tensor all({4, cols}, Device{}), a({2, cols}, Device{}), b({2, cols}, Device{});
  all.copy_from_host(z);
  a.copy_from_host(std::span<const float>(z).first(2 * cols));
  b.copy_from_host(std::span<const float>(z).subspan(2 * cols));
  Tensor d_all, d_a, d_b, d_div;
  loss.forward_backward(all, y, d_all);
  loss.forward_backward(a, std::span<const std::int32_t>(y).first(2), d_a);
  loss.forward_backward(b, std::span<const std::int32_t>(y).subspan(2), d_b);
  loss.forward_backward(a, std::span<const std::int32_t>(y).first(2), d_div, 4);
  const auto ga = d_a.to_host(), gb = d_b.to_host(), gall = d_all.to_host(), gdiv = d_div.to_host();
  for (std::int64_t i = 0; i < 2 * cols; ++i) {
    EXPECT_NEAR(0.5 * ga[i], gall[i], 1e-7);
    EXPECT_NEAR(0.5 * gb[i], gall[2 * cols + i], 1e-7);
    EXPECT_NEAR(gdiv[i], gall[i], 1e-7);
  }
}

TEST(SoftmaxCrossEntropy, TiesPickTheFirstMaximum) {
  const std::vector<float> z = {1.0f, 1.0f, 0.0f, 1.0f, 1.0f, 0.0f};
  Tensor logits({2, 3}, Device{});
  logits.copy_from_host(z);
  SoftmaxCrossEntropy loss(Device{});
  const std::vector<std::int32_t> labels = {0, 1};
  EXPECT_EQ(loss.forward(logits, labels).correct, 1);
}

TEST(SoftmaxCrossEntropy, LabelsOutOfRangeOrMiscountedAreErrors) {
  Tensor logits({2, 3}, Device{});
  logits.copy_from_host(std::vector<float>(6, 0.0f));
  SoftmaxCrossEntropy loss(Device{});
  try {
    const std::vector<std::int32_t> bad = {0, 3};
    loss.forward(logits, bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("label 3"), std::string::npos) << e.what();
  }
  const std::vector<std::int32_t> negative = {-1, 0};
  EXPECT_THROW(loss.forward(logits, negative), Error);
  const std::vector<std::int32_t> short_labels = {0};
  EXPECT_THROW(loss.forward(logits, short_labels), Error);
}

// The gradient written over the logits (as the trainer writes it, nn::Model::logits_may_hold_their_gradient)
// equals the one written apart, bit for bit, with each row's loss and verdict: narrow rows and a vocabulary's.
TEST(SoftmaxCrossEntropy, GradientWrittenOverTheLogitsEqualsTheSeparateOne) {
  for (const std::int64_t cols : {std::int64_t{10}, std::int64_t{300}}) {
    const std::int64_t rows = 7;
    std::vector<float> z = random_vector(rows * cols, 41, -5.0f, 5.0f);
    std::vector<std::int32_t> labels(rows);
    for (std::int64_t r = 0; r < rows; ++r) labels[r] = static_cast<std::int32_t>((r * 13 + 2) % cols);
    std::vector<float> apart(z.size()), loss_apart(rows), loss_over(rows);
    std::vector<std::int32_t> correct_apart(rows), correct_over(rows);
    ops::softmax_cross_entropy(Device{}, z.data(), labels.data(), rows, cols, 0.25f, apart.data(), loss_apart.data(),
                               correct_apart.data());
    ops::softmax_cross_entropy(Device{}, z.data(), labels.data(), rows, cols, 0.25f, z.data(), loss_over.data(),
                               correct_over.data());
    EXPECT_EQ(z, apart) << cols << " classes";
    EXPECT_EQ(loss_over, loss_apart) << cols << " classes";
    EXPECT_EQ(correct_over, correct_apart) << cols << " classes";
  }
}

TEST(LossStats, SumsOverBatches) {
  LossStats a{3.0, 2, 4}, b{1.0, 1, 4};
  a += b;
  EXPECT_EQ(a.count, 8);
  EXPECT_EQ(a.correct, 3);
  EXPECT_DOUBLE_EQ(a.mean_loss(), 0.5);
  EXPECT_DOUBLE_EQ(a.accuracy(), 3.0 / 8);
}


TEST(SoftmaxCrossEntropy, PerTokenLogitsWithAnIgnoreIndex) {
  const std::int64_t n = 2, t = 3, cols = 4, rows = n * t;
  const auto z = random_vector(rows * cols, 31, -2.0f, 2.0f);
  const std::vector<std::int32_t> targets = {1, -100, 3, 0, 2, -100};
  Tensor logits({n, t, cols}, Device{});
  logits.copy_from_host(z);
  Tensor target_tensor({n, t}, Device{}, DType::kInt32);
  target_tensor.copy_from_host(std::span<const std::int32_t>(targets));
  SoftmaxCrossEntropy loss(Device{}, -100);
  Tensor dlogits;
  const LossStats s = loss.forward_backward(logits, target_tensor, dlogits);
  // Reference: the mean over the 4 counted tokens; ignored rows have no gradient.
  auto mean_loss = [&](const std::vector<double>& zz) {
    double sum = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      if (targets[r] != -100) sum += testing::naive_xent(zz.data() + r * cols, cols, targets[r]);
    return sum / 4;
  };
  std::vector<double> zd(z.begin(), z.end());
  EXPECT_EQ(s.count, 4);
  EXPECT_NEAR(s.mean_loss(), mean_loss(zd), 1e-5);
  ASSERT_EQ(dlogits.shape(), (Shape{n, t, cols}));
  const auto g = dlogits.to_host();
  for (std::size_t i = 0; i < zd.size(); ++i) {
    const double saved = zd[i], h = 1e-5;
    zd[i] = saved + h;
    const double up = mean_loss(zd);
    zd[i] = saved - h;
    const double down = mean_loss(zd);
    zd[i] = saved;
    ASSERT_NEAR(g[i], (up - down) / (2 * h), 1e-6) << "logit " << i;
  }
  // Without the ignore index, -100 is an error naming the row; targets of the wrong shape name both shapes.
  SoftmaxCrossEntropy strict(Device{});
  try {
    strict.forward(logits, target_tensor);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("label -100 of row 1"), std::string::npos) << e.message();
  }
  Tensor wrong({n * t}, Device{}, DType::kInt32);
  try {
    loss.forward(logits, wrong);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("[6] do not fit logits of shape [2, 3, 4]; expected [2, 3]"), std::string::npos)
        << e.message();
  }
  // Float targets are refused, naming the dtype.
  Tensor float_targets({n, t}, Device{});
  try {
    loss.forward(logits, float_targets);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("holds float32 values where int32 is needed"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace mirror::nn
