// test_conv_layers.cc — Conv2d against a plain-loop convolution in double (forward) and against central
// differences of that double reference loss (dx, dW, db), on odd shapes: stride 2, padding, non-square kernels
// and images, batch 1, channel counts 1, 3, 5, 7 (plain layouts) and 8, 9, 16 (blocked), a 1×1 projection; plus kAccumulate, grad_ready order, need_dx false, a change
// of batch size between calls, and bad input. With the Winograd algorithm (cpu_kernels.h) the same references on
// the shapes oneDNN computes by Winograd on AVX-512 (3×3, stride 1, 16 and 32 channels), and where it is chosen.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "layer_checks.h"
#include "mirror/error.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/conv2d.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::central_differences;
using testing::expect_close;
using testing::host_tensor;
using testing::random_vector;
using testing::to_double;
using testing::weighted;

struct ConvCase {
  std::int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw;
  bool bias;
  std::int64_t oh() const { return (h + 2 * ph - kh) / sh + 1; }
  std::int64_t ow() const { return (w + 2 * pw - kw) / sw + 1; }
};

// y[n,o,i,j] = b[o] + Σ_c,p,q W[o,c,p,q] x[n,c,i·sh−ph+p, j·sw−pw+q] (zero outside), in double.
std::vector<double> conv_ref(const ConvCase& k, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b) {
  std::vector<double> y(k.n * k.o * k.oh() * k.ow());
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t o = 0; o < k.o; ++o)
      for (std::int64_t i = 0; i < k.oh(); ++i)
        for (std::int64_t j = 0; j < k.ow(); ++j) {
          double s = k.bias ? b[o] : 0.0;
          for (std::int64_t c = 0; c < k.c; ++c)
            for (std::int64_t p = 0; p < k.kh; ++p)
              for (std::int64_t q = 0; q < k.kw; ++q) {
                const std::int64_t r = i * k.sh - k.ph + p, t = j * k.sw - k.pw + q;
                if (r < 0 || r >= k.h || t < 0 || t >= k.w) continue;
                s += w[((o * k.c + c) * k.kh + p) * k.kw + q] * x[((n * k.c + c) * k.h + r) * k.w + t];
              }
          y[((n * k.o + o) * k.oh() + i) * k.ow() + j] = s;
        }
  return y;
}

struct ConvFixture {
  ConvCase k;
  std::vector<float> x, w, b, wg, bg;
  Conv2d layer;
  Tensor xt;
  explicit ConvFixture(const ConvCase& kc, unsigned seed = 1)
      : k(kc),
        x(random_vector(kc.n * kc.c * kc.h * kc.w, seed)),
        w(random_vector(kc.o * kc.c * kc.kh * kc.kw, seed + 1)),
        b(random_vector(kc.o, seed + 2)),
        wg(w.size(), -9.0f),
        bg(b.size(), -9.0f),
        layer(kc.c, kc.o, kc.kh, kc.kw, kc.sh, kc.sw, kc.ph, kc.pw, kc.bias, Device{}),
        xt(host_tensor(x, {kc.n, kc.c, kc.h, kc.w})) {
    std::vector<ParamBinding> bindings{{w.data(), wg.data()}};
    if (k.bias) bindings.push_back({b.data(), bg.data()});
    layer.bind_parameters(bindings);
  }
};

class ConvShapes : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvShapes, ForwardMatchesPlainLoops) {
  ConvFixture f(GetParam());
  const Tensor& y = f.layer.forward(f.xt);
  ASSERT_EQ(y.shape(), (Shape{f.k.n, f.k.o, f.k.oh(), f.k.ow()}));
  EXPECT_EQ(f.layer.output_sample_shape({f.k.c, f.k.h, f.k.w}), (Shape{f.k.o, f.k.oh(), f.k.ow()}));
  // Each output sums c·kh·kw products of values in [-1, 1] in float: rounding well below 1e-5 relative.
  expect_close(y.to_host(), conv_ref(f.k, to_double(f.x), to_double(f.w), to_double(f.b)), 1e-5, "y");
}

TEST_P(ConvShapes, BackwardMatchesFiniteDifferencesOfTheReference) {
  ConvFixture f(GetParam());
  const auto r = random_vector(f.k.n * f.k.o * f.k.oh() * f.k.ow(), 99);
  f.layer.forward(f.xt);
  const Tensor dy = host_tensor(r, {f.k.n, f.k.o, f.k.oh(), f.k.ow()});
  std::vector<std::size_t> ready;
  const Tensor* dx = f.layer.backward(dy, GradMode::kOverwrite, true, [&](std::size_t i) { ready.push_back(i); });
  ASSERT_NE(dx, nullptr);
  EXPECT_EQ(ready, f.k.bias ? (std::vector<std::size_t>{1, 0}) : (std::vector<std::size_t>{0}));
  const auto xd = to_double(f.x), wd = to_double(f.w), bd = to_double(f.b);
  // The reference is linear in each argument: the central difference in double is exact to ~1e-12; what is
  // left is the float rounding of the layer's sums (tolerance 1e-4 relative).
  const double h = 1e-3;
  expect_close(dx->to_host(),
               central_differences([&](const auto& v) { return weighted(conv_ref(f.k, v, wd, bd), r); }, xd, h), 1e-4,
               "dx");
  expect_close(f.wg, central_differences([&](const auto& v) { return weighted(conv_ref(f.k, xd, v, bd), r); }, wd, h),
               1e-4, "dW");
  if (f.k.bias)
    expect_close(f.bg,
                 central_differences([&](const auto& v) { return weighted(conv_ref(f.k, xd, wd, v), r); }, bd, h),
                 1e-4, "db");
}

TEST_P(ConvShapes, AccumulateAddsAndNeedDxFalseSkipsDx) {
  ConvFixture f(GetParam());
  const Tensor dy = host_tensor(random_vector(f.k.n * f.k.o * f.k.oh() * f.k.ow(), 7), {f.k.n, f.k.o, f.k.oh(), f.k.ow()});
  f.layer.forward(f.xt);
  EXPECT_EQ(f.layer.backward(dy, GradMode::kOverwrite, false, {}), nullptr);
  const auto w1 = f.wg, b1 = f.bg;
  const auto w0 = random_vector(f.w.size(), 8), b0 = random_vector(f.b.size(), 9);
  f.wg = w0;
  f.bg = b0;
  f.layer.backward(dy, GradMode::kAccumulate, false, {});
  for (std::size_t i = 0; i < w1.size(); ++i) ASSERT_NEAR(f.wg[i], w0[i] + w1[i], 1e-5) << "weight " << i;
  if (f.k.bias) {
    for (std::size_t i = 0; i < b1.size(); ++i) ASSERT_NEAR(f.bg[i], b0[i] + b1[i], 1e-5) << "bias " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, ConvShapes,
    ::testing::Values(ConvCase{2, 3, 7, 6, 5, 3, 2, 2, 1, 1, 0, true},    // stride 2 × 1, non-square kernel
                      ConvCase{1, 5, 5, 8, 7, 1, 1, 1, 1, 0, 0, false},   // batch 1, 1×1, no bias
                      ConvCase{3, 7, 9, 5, 4, 3, 3, 2, 2, 1, 1, true},    // stride 2, padding 1, 7 channels
                      ConvCase{2, 1, 6, 6, 3, 3, 3, 1, 1, 0, 0, true},    // one input channel, valid
                      ConvCase{1, 3, 4, 9, 5, 2, 4, 2, 3, 1, 2, false},  // uneven strides and padding
                      // >= 8 input channels: oneDNN's blocked layouts and the reorders around them
                      ConvCase{2, 9, 6, 5, 11, 3, 3, 2, 2, 1, 1, true},
                      ConvCase{1, 16, 5, 7, 8, 3, 1, 1, 1, 1, 0, false},
                      ConvCase{3, 8, 4, 4, 16, 2, 2, 1, 1, 1, 1, true},
                      ConvCase{3, 12, 5, 4, 6, 1, 1, 2, 2, 0, 0, true}));  // 1×1 stride 2 (plain again)

TEST(Conv2d, PlainAndBlockedLayoutsAgree) {
  const ConvCase k{2, 5, 7, 6, 9, 3, 3, 2, 1, 1, 1, true};
  ConvFixture plain(k);
  const auto y = plain.layer.forward(plain.xt).to_host();
  const auto r = random_vector(y.size(), 5);
  const Tensor dy = host_tensor(r, {k.n, k.o, k.oh(), k.ow()});
  const auto dx = plain.layer.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  for (ConvLayout layout : {ConvLayout::kPlain, ConvLayout::kBlocked}) {
    Conv2d other(k.c, k.o, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, true, Device{}, layout);
    std::vector<float> wg(plain.w.size()), bg(plain.b.size());
    const ParamBinding bindings[] = {{plain.w.data(), wg.data()}, {plain.b.data(), bg.data()}};
    other.bind_parameters(bindings);
    expect_close(other.forward(plain.xt).to_host(), to_double(y), 1e-5, "y");
    expect_close(other.backward(dy, GradMode::kOverwrite, true, {})->to_host(), to_double(dx), 1e-5, "dx");
    expect_close(wg, to_double(plain.wg), 1e-5, "dW");
    expect_close(bg, to_double(plain.bg), 1e-5, "db");
  }
}

// An image model's first layer (1 input channel, 3×3) where the model lets y be blocked: oneDNN's first-layer
// direct kernels read the plain x and write a blocked y, instead of im2col + GEMM on plain layouts (conv2d_cpu.cc,
// first_layer), from AVX2 on; the values are the plain loops' all the same, and dW/db the central differences'.
TEST(Conv2d, FirstLayerTakesPlainInputAndGivesBlockedOutputThroughTheDirectKernels) {
  const ConvCase k{3, 1, 10, 9, 16, 3, 3, 1, 1, 1, 1, true};
  ConvFixture f(k);
  f.layer.set_blocked_output(true);
  const Tensor& y = f.layer.forward(f.xt);
  const std::string impl = f.layer.implementation();
  std::cout << "first layer (" << cpu_isa_name() << "): " << impl << ", y " << (y.blocked() ? "blocked" : "NCHW") << "\n";
  const auto xd = to_double(f.x), wd = to_double(f.w), bd = to_double(f.b);
  expect_close(testing::nchw_values(y), conv_ref(k, xd, wd, bd), 1e-5, "y");
  if (cpu_isa_name() != "sse41") {  // oneDNN's ISA (test_nn_cpu_kernels checks it against cpuid): AVX2 or better
    EXPECT_TRUE(y.blocked()) << impl;
    EXPECT_EQ(impl.rfind("jit", 0), 0u) << "forward should be a direct JIT kernel, not GEMM: " << impl;
  }
  const auto r = random_vector(k.n * k.o * k.oh() * k.ow(), 77);
  Tensor dy = testing::blocked_tensor(r, {k.n, k.o, k.oh(), k.ow()}, y.layout());
  if (!y.blocked()) dy = host_tensor(r, {k.n, k.o, k.oh(), k.ow()});
  EXPECT_EQ(f.layer.backward(dy, GradMode::kOverwrite, false, {}), nullptr);  // a first layer needs no dx
  const double h = 1e-3;
  expect_close(f.wg, central_differences([&](const auto& v) { return weighted(conv_ref(k, xd, v, bd), r); }, wd, h),
               1e-4, "dW");
  expect_close(f.bg, central_differences([&](const auto& v) { return weighted(conv_ref(k, xd, wd, v), r); }, bd, h),
               1e-4, "db");
}

// Sets the process-wide convolution algorithm for one test and puts the library default back after it.
class ConvAlgorithmScope {
 public:
  explicit ConvAlgorithmScope(CpuConvAlgorithm a) { set_cpu_conv_algorithm(a); }
  ~ConvAlgorithmScope() { set_cpu_conv_algorithm(CpuConvAlgorithm::kDirect); }
};

// oneDNN 2.6 has Winograd kernels from avx512_core on (its own ISA name, which test_nn_cpu_kernels checks against
// cpuid).
bool winograd_at_this_isa() { return cpu_isa_name().rfind("avx512_core", 0) == 0; }

// Winograd F(4×4, 3×3) sums transformed tiles (constants up to ±8 and their products), so its float rounding in y
// is larger than the direct kernels': measured here up to 1.7e-5 relative, where direct stays below 1e-5. The
// references are the same; y's tolerance is 5e-5 (1e-5 fails), the gradients' 1e-4 as for direct.
TEST(Conv2dWinograd, ForwardAndBackwardMatchThePlainLoopsOnWinogradShapes) {
  ConvAlgorithmScope scope(CpuConvAlgorithm::kWinograd);
  for (const ConvCase& k : {ConvCase{2, 16, 5, 6, 16, 3, 3, 1, 1, 1, 1, true},     // padded, non-square image
                            ConvCase{1, 32, 4, 4, 16, 3, 3, 1, 1, 1, 1, false},    // batch 1, 32 → 16
                            ConvCase{2, 16, 5, 6, 32, 3, 3, 1, 1, 0, 0, true}}) {  // valid, 16 → 32
    SCOPED_TRACE("c " + std::to_string(k.c) + " o " + std::to_string(k.o) + " " + std::to_string(k.h) + "x" +
                 std::to_string(k.w));
    ConvFixture f(k);
    const auto xd = to_double(f.x), wd = to_double(f.w), bd = to_double(f.b);
    expect_close(f.layer.forward(f.xt).to_host(), conv_ref(k, xd, wd, bd), 5e-5, "y");
    if (winograd_at_this_isa()) {
      EXPECT_NE(f.layer.implementation().find("wino"), std::string::npos) << f.layer.implementation();
    }
    const auto r = random_vector(k.n * k.o * k.oh() * k.ow(), 99);
    const Tensor* dx = f.layer.backward(host_tensor(r, {k.n, k.o, k.oh(), k.ow()}), GradMode::kOverwrite, true, {});
    ASSERT_NE(dx, nullptr);
    const double h = 1e-3;
    expect_close(dx->to_host(),
                 central_differences([&](const auto& v) { return weighted(conv_ref(k, v, wd, bd), r); }, xd, h), 1e-4,
                 "dx");
    expect_close(f.wg, central_differences([&](const auto& v) { return weighted(conv_ref(k, xd, v, bd), r); }, wd, h),
                 1e-4, "dW");
    if (k.bias)
      expect_close(f.bg, central_differences([&](const auto& v) { return weighted(conv_ref(k, xd, wd, v), r); }, bd, h),
                   1e-4, "db");
  }
}

// Winograd only where asked for and where oneDNN has it (3×3 stride 1 on avx512_core); stride 2, 1×1 and the
// direct setting stay direct; an AVX2 CPU computes direct whatever is asked.
TEST(Conv2dWinograd, IsChosenOnlyWhereAskedForAndOneDnnHasIt) {
  const auto runs_winograd = [](CpuConvAlgorithm a, const ConvCase& k) {
    ConvAlgorithmScope scope(a);
    ConvFixture f(k);
    f.layer.forward(f.xt);
    std::cout << (a == CpuConvAlgorithm::kWinograd ? "winograd " : "direct ") << k.kh << "x" << k.kw << " stride " << k.sh << ": "
              << f.layer.implementation() << "\n";
    EXPECT_FALSE(f.layer.implementation().empty());
    return f.layer.implementation().find("wino") != std::string::npos;
  };
  const ConvCase three{2, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, false}, strided{2, 16, 8, 8, 32, 3, 3, 2, 2, 1, 1, false},
      one{2, 16, 8, 8, 32, 1, 1, 1, 1, 0, 0, false};
  EXPECT_EQ(runs_winograd(CpuConvAlgorithm::kWinograd, three), winograd_at_this_isa()) << cpu_isa_name();
  EXPECT_FALSE(runs_winograd(CpuConvAlgorithm::kDirect, three));
  EXPECT_FALSE(runs_winograd(CpuConvAlgorithm::kWinograd, strided));
  EXPECT_FALSE(runs_winograd(CpuConvAlgorithm::kWinograd, one));
  EXPECT_EQ(cpu_conv_algorithm(), CpuConvAlgorithm::kDirect);  // the library's default
}

TEST(Conv2d, DeclaresPyTorchLayoutAndInitialises) {
  Conv2d with_bias(3, 8, 3, 2, 1, 1, 0, 0, true, Device{});
  const auto specs = with_bias.parameter_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "weight");
  EXPECT_EQ(specs[0].shape, (Shape{8, 3, 3, 2}));
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, (Shape{8}));
  EXPECT_EQ(Conv2d(3, 8, 3, 3, 1, 1, 1, 1, false, Device{}).parameter_specs().size(), 1u);
  std::vector<float> w(8 * 3 * 3 * 2), b(8, 5.0f);
  with_bias.init_parameter(0, w, 42);
  with_bias.init_parameter(1, b, 42);
  const float bound = static_cast<float>(std::sqrt(6.0 / (3 * 3 * 2)));
  float mx = 0;
  for (float v : w) mx = std::max(mx, std::abs(v));
  EXPECT_LE(mx, bound);
  EXPECT_GT(mx, 0.5f * bound);
  for (float v : b) EXPECT_EQ(v, 0.0f);
}

TEST(Conv2d, NewBatchSizeBetweenCalls) {
  for (std::int64_t c : {3, 12}) {  // plain and blocked layouts
    ConvFixture big(ConvCase{3, c, 5, 5, 2, 3, 3, 1, 1, 1, 1, true});
    big.layer.forward(big.xt);
    // Same layer, batch 1: the primitives are rebuilt for the new shape.
    const ConvCase one{1, c, 5, 5, 2, 3, 3, 1, 1, 1, 1, true};
    std::vector<float> x1(big.x.begin(), big.x.begin() + c * 5 * 5);
    const Tensor x1t = host_tensor(x1, {1, c, 5, 5});
    expect_close(big.layer.forward(x1t).to_host(), conv_ref(one, to_double(x1), to_double(big.w), to_double(big.b)),
                 1e-5, "y batch 1");
  }
}

TEST(Conv2d, RefusesBadInput) {
  EXPECT_THROW(Conv2d(0, 4, 3, 3, 1, 1, 0, 0, true, Device{}), Error);
  EXPECT_THROW(Conv2d(3, 4, 3, 3, 0, 1, 0, 0, true, Device{}), Error);
  EXPECT_THROW(Conv2d(3, 4, 3, 3, 1, 1, -1, 0, true, Device{}), Error);
  Conv2d conv(3, 4, 5, 5, 1, 1, 0, 0, true, Device{});
  EXPECT_THROW(conv.output_sample_shape({2, 8, 8}), Error);   // wrong channel count
  EXPECT_THROW(conv.output_sample_shape({3, 4, 8}), Error);   // smaller than the kernel
  EXPECT_THROW(conv.output_sample_shape({3 * 8 * 8}), Error);  // flat sample
  std::vector<float> w(4 * 3 * 5 * 5), b(4), g(w.size()), gb(4);
  const ParamBinding bindings[] = {{w.data(), g.data()}, {b.data(), gb.data()}};
  conv.bind_parameters(bindings);
  const Tensor wrong = host_tensor(std::vector<float>(2 * 8 * 8), {1, 2, 8, 8});
  EXPECT_THROW(conv.forward(wrong), Error);
  try {
    conv.output_sample_shape({2, 8, 8});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 input channels"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mirror::nn
