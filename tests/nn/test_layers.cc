// test_layers.cc — every layer's forward against a naive triple-loop reference and its backward against
// central finite differences of its own forward. Linear and ReLU are linear (piecewise linear) in each input
// and parameter, so the central difference has no truncation error: what remains is float rounding of the
// outputs, which the tolerances bound (see each test).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mirror/error.h"
#include "mirror/nn/activation.h"
#include "mirror/nn/linear.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;
constexpr double kU = std::numeric_limits<float>::epsilon() / 2;

// L = sum(r ⊙ y) in double: dL/dy = r.
double weighted_sum(const Tensor& y, const std::vector<float>& r) {
  const auto h = y.to_host();
  double s = 0;
  for (std::size_t i = 0; i < h.size(); ++i) s += static_cast<double>(h[i]) * r[i];
  return s;
}

struct LinearFixture {
  std::int64_t batch = 4, in = 6, out = 5;
  std::vector<float> w = random_vector(out * in, 11), b = random_vector(out, 12), wg, bg;
  std::vector<float> x = random_vector(batch * in, 13);
  Linear layer{in, out, Device{}};
  Tensor xt{{batch, in}, Device{}};
  LinearFixture() : wg(out * in, -9.0f), bg(out, -9.0f) {
    const ParamBinding bindings[] = {{w.data(), wg.data()}, {b.data(), bg.data()}};
    layer.bind_parameters(bindings);
    xt.copy_from_host(x);
  }
};

TEST(Linear, DeclaresWeightAndBias) {
  Linear l(784, 512, Device{});
  const auto specs = l.parameter_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, (Shape{512, 784}));
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, (Shape{512}));
  EXPECT_EQ(l.output_sample_shape({784}), (Shape{512}));
  EXPECT_EQ(l.output_sample_shape({1, 28, 28}), (Shape{512}));
  EXPECT_THROW(l.output_sample_shape({783}), Error);
  EXPECT_THROW(Linear(0, 3, Device{}), Error);
}

TEST(Linear, ForwardMatchesNaive) {
  LinearFixture f;
  const Tensor& y = f.layer.forward(f.xt);
  ASSERT_EQ(y.shape(), (Shape{f.batch, f.out}));
  const auto got = y.to_host();
  for (std::int64_t r = 0; r < f.batch; ++r)
    for (std::int64_t o = 0; o < f.out; ++o) {
      double s = f.b[o], mag = std::abs(f.b[o]);
      for (std::int64_t i = 0; i < f.in; ++i) {
        s += static_cast<double>(f.w[o * f.in + i]) * f.x[r * f.in + i];
        mag += std::abs(static_cast<double>(f.w[o * f.in + i]) * f.x[r * f.in + i]);
      }
      ASSERT_NEAR(got[r * f.out + o], s, (f.in + 3) * kU * mag);
    }
  Tensor wrong({f.batch, f.in + 1}, Device{});
  EXPECT_THROW(f.layer.forward(wrong), Error);
}

TEST(Linear, BackwardMatchesFiniteDifferences) {
  LinearFixture f;
  const auto r = random_vector(f.batch * f.out, 14);
  f.layer.forward(f.xt);
  Tensor dy({f.batch, f.out}, Device{});
  dy.copy_from_host(r);
  std::vector<std::size_t> ready;
  const Tensor* dx = f.layer.backward(dy, GradMode::kOverwrite, true, [&](std::size_t i) { ready.push_back(i); });
  ASSERT_NE(dx, nullptr);
  EXPECT_EQ(ready, (std::vector<std::size_t>{1, 0}));  // bias first, then weight
  const auto dxh = dx->to_host();

  // L is exactly linear in each weight, bias and input, so (L(p+h) - L(p-h)) / 2h is exact up to rounding of
  // y (|err| <~ (in+3) u |y| per element, ~1e-6 here) times sum |r| (<= batch) over 2h = 1: tolerance 1e-4.
  const float h = 0.5f;
  auto fd = [&](float& p) {
    const float saved = p;
    p = saved + h;
    const double up = weighted_sum(f.layer.forward(f.xt), r);
    p = saved - h;
    const double down = weighted_sum(f.layer.forward(f.xt), r);
    p = saved;
    return (up - down) / (2.0 * h);
  };
  for (std::size_t i = 0; i < f.w.size(); ++i) ASSERT_NEAR(f.wg[i], fd(f.w[i]), 1e-4) << "weight " << i;
  for (std::size_t i = 0; i < f.b.size(); ++i) ASSERT_NEAR(f.bg[i], fd(f.b[i]), 1e-4) << "bias " << i;
  for (std::size_t i = 0; i < f.x.size(); ++i) {
    auto fd_x = [&](float delta) {
      auto xs = f.x;
      xs[i] += delta;
      f.xt.copy_from_host(xs);
      return weighted_sum(f.layer.forward(f.xt), r);
    };
    const double want = (fd_x(h) - fd_x(-h)) / (2.0 * h);
    ASSERT_NEAR(dxh[i], want, 1e-4) << "input " << i;
  }
}

TEST(Linear, AccumulateAddsToGradientsAndNoDxWhenNotNeeded) {
  LinearFixture f;
  const auto r1 = random_vector(f.batch * f.out, 15), r2 = random_vector(f.batch * f.out, 16);
  Tensor dy({f.batch, f.out}, Device{});
  f.layer.forward(f.xt);
  dy.copy_from_host(r1);
  EXPECT_EQ(f.layer.backward(dy, GradMode::kOverwrite, false, {}), nullptr);
  const auto w1 = f.wg, b1 = f.bg;
  dy.copy_from_host(r2);
  f.layer.backward(dy, GradMode::kOverwrite, false, {});
  const auto w2 = f.wg, b2 = f.bg;
  dy.copy_from_host(r1);
  f.layer.backward(dy, GradMode::kOverwrite, false, {});
  dy.copy_from_host(r2);
  f.layer.backward(dy, GradMode::kAccumulate, false, {});
  // Each accumulated entry is one float add of two rounded sums: within a few ulps of the sum of the parts.
  for (std::size_t i = 0; i < w1.size(); ++i) ASSERT_NEAR(f.wg[i], w1[i] + w2[i], 4 * kU * (std::abs(w1[i]) + std::abs(w2[i])) * f.batch + 1e-7);
  for (std::size_t i = 0; i < b1.size(); ++i) ASSERT_NEAR(f.bg[i], b1[i] + b2[i], 4 * kU * (std::abs(b1[i]) + std::abs(b2[i])) * f.batch + 1e-7);
}

TEST(Relu, ForwardAndBackwardMatchReference) {
  const std::int64_t batch = 3, n = 8;
  auto x = random_vector(batch * n, 17);
  for (auto& v : x) v = v >= 0 ? v + 0.1f : v - 0.1f;  // keep every input 0.1 away from the kink
  ReLU relu(Device{});
  EXPECT_TRUE(relu.parameter_specs().empty());
  Tensor xt({batch, n}, Device{});
  xt.copy_from_host(x);
  const auto y = relu.forward(xt).to_host();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);

  const auto r = random_vector(batch * n, 18);
  Tensor dy({batch, n}, Device{});
  dy.copy_from_host(r);
  const auto dx = relu.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  // Piecewise linear and h < 0.1: the central difference is exact up to one rounding of y (<= u |x| / h).
  const float h = 0.05f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto at = [&](float delta) {
      auto xs = x;
      xs[i] += delta;
      xt.copy_from_host(xs);
      return weighted_sum(relu.forward(xt), r);
    };
    ASSERT_NEAR(dx[i], (at(h) - at(-h)) / (2.0 * h), 1e-5) << "input " << i;
  }
}

}  // namespace
}  // namespace mirror::nn
