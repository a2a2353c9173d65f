// test_precision.cc — bfloat16 compute (mirror/nn/precision.h) against independent references:
// - the rounding, bit for bit, against the collectives' conversion library (mirror/coll/half.h, a separate
//   implementation) over a sweep of all float32 bit patterns and hand-picked cases (ties, NaN, infinities,
//   the largest finite values, subnormals);
// - a linear layer's three products against double-precision products of operands rounded to bfloat16 here
//   (so the layer must round exactly its operands, and accumulate in float32);
// - layers (linear per position, attention over 130 positions) and models (convolutions with and without
//   blocked layouts, a tiny GPT with a tied head) in bfloat16 against the same in float32: forward, input and
//   parameter gradients within bfloat16's tolerance, and not identical (bfloat16 really ran);
// - the refusal where oneDNN has no bfloat16 kernels (the test run again under ONEDNN_MAX_CPU_ISA=AVX2).
// Every bfloat16 case skips, saying why, on a CPU without oneDNN's bfloat16 kernels.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>

#include "mirror/coll/half.h"
#include "mirror/error.h"
#include "mirror/nn/causal_self_attention.h"
#include "mirror/nn/conv2d.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/model_description.h"
#include "mirror/nn/precision.h"
#include "reference.h"
#include "scoped_precision.h"

namespace mirror::nn {
namespace {

using testing::max_relative_difference;
using testing::random_vector;

using testing::ScopedPrecision;

#define SKIP_WITHOUT_BF16()                                                                \
  do {                                                                                     \
    if (!cpu_bf16_problem().empty()) GTEST_SKIP() << "no bfloat16 compute here: " << cpu_bf16_problem(); \
  } while (0)

std::uint16_t rounded(float f) {
  BFloat16 b;
  round_to_bfloat16(&f, &b, 1);
  return b.bits;
}

float bits_to_float(std::uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Bfloat16Rounding, MatchesTheCollectivesConversionOverASweepOfAllBitPatterns) {
  constexpr std::uint32_t kStride = 4099;  // prime: every exponent, both signs, NaN payloads, ties
  std::vector<float> in;
  for (std::uint64_t bits = 0; bits <= 0xffffffffull; bits += kStride) in.push_back(bits_to_float(static_cast<std::uint32_t>(bits)));
  std::vector<BFloat16> out(in.size());
  round_to_bfloat16(in.data(), out.data(), static_cast<std::int64_t>(in.size()));
  for (std::size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(out[i].bits, coll::float_to_bfloat16(in[i])) << "float bits 0x" << std::hex << std::bit_cast<std::uint32_t>(in[i]);
}

TEST(Bfloat16Rounding, TiesGoToEvenAndSpecialValuesAreKept) {
  EXPECT_EQ(rounded(1.0f), 0x3f80);
  EXPECT_EQ(rounded(bits_to_float(0x3f808000)), 0x3f80);  // halfway, even below: down
  EXPECT_EQ(rounded(bits_to_float(0x3f818000)), 0x3f82);  // halfway, odd below: up
  EXPECT_EQ(rounded(bits_to_float(0x3f808001)), 0x3f81);  // just above halfway: up
  EXPECT_EQ(rounded(bits_to_float(0x3f807fff)), 0x3f80);  // just below halfway: down
  EXPECT_EQ(rounded(-0.0f), 0x8000);
  EXPECT_EQ(rounded(INFINITY), 0x7f80);
  EXPECT_EQ(rounded(-INFINITY), 0xff80);
  EXPECT_EQ(rounded(bits_to_float(0x7f7fffff)), 0x7f80);  // the largest float rounds up to infinity
  EXPECT_EQ(rounded(bits_to_float(0x00008000)), 0x0000);  // subnormal tie, even below
  EXPECT_EQ(rounded(bits_to_float(0x00018000)), 0x0002);  // subnormal tie, odd below
  for (std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x7fff8000u}) {
    const std::uint16_t b = rounded(bits_to_float(nan));
    EXPECT_TRUE((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0) << std::hex << nan << " -> " << b;
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << "sign of NaN " << std::hex << nan;
  }
}

std::vector<double> bf16_values(const std::vector<float>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = coll::bfloat16_to_float(coll::float_to_bfloat16(v[i]));
  return out;
}

// Σ_p a(i, p)·b(p, j) in double, and Σ |terms| (the scale of float32 accumulation's error).
struct Product {
  std::vector<double> value, magnitude;
};
Product product(const std::vector<double>& a, bool ta, const std::vector<double>& b, bool tb, std::int64_t m,
                std::int64_t n, std::int64_t k) {
  Product r{std::vector<double>(m * n, 0.0), std::vector<double>(m * n, 0.0)};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) {
        const double t = (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
        r.value[i * n + j] += t;
        r.magnitude[i * n + j] += std::fabs(t);
      }
  return r;
}

void expect_product(const std::vector<float>& got, const Product& want, const char* what) {
  ASSERT_EQ(got.size(), want.value.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.value[i], 1e-5 * want.magnitude[i] + 1e-30) << what << "[" << i << "]";
}

TEST(Bfloat16Compute, LinearRoundsItsOperandsAndAccumulatesInFloat32) {
  SKIP_WITHOUT_BF16();
  const std::int64_t rows = 37, in = 70, out = 29;
  Linear layer(in, out, Device{}, /*bias=*/false);
  std::vector<float> w = random_vector(out * in, 3), dw(out * in), x = random_vector(rows * in, 4),
                     dy = random_vector(rows * out, 5);
  const ParamBinding binding{w.data(), dw.data()};
  layer.bind_parameters({&binding, 1});
  Tensor xt({rows, in}, Device{}), dyt({rows, out}, Device{});
  xt.copy_from_host(x);
  dyt.copy_from_host(dy);
  const ScopedPrecision bf16(Precision::kBFloat16);
  const std::vector<float> y = layer.forward(xt).to_host();
  const std::vector<float> dx = layer.backward(dyt, GradMode::kOverwrite, true, {})->to_host();
  const std::vector<double> x16 = bf16_values(x), w16 = bf16_values(w), dy16 = bf16_values(dy);
  expect_product(y, product(x16, false, w16, true, rows, out, in), "y");
  expect_product(dw, product(dy16, true, x16, false, out, in, rows), "dW");
  expect_product(dx, product(dy16, false, w16, false, rows, in, out), "dx");
}

// Forward output and parameter gradients of a model for L = Σ r·logits.
struct Result {
  std::vector<float> logits, grads;
};
Result run(Model& model, const Tensor& x) {
  const Tensor& logits = model.forward(x);
  const std::vector<float> r = random_vector(static_cast<std::size_t>(logits.numel()), 99);
  Tensor dlogits(logits.shape(), Device{});
  dlogits.copy_from_host(r);
  Result result{logits.to_host(), {}};
  model.backward(dlogits);
  result.grads = model.grads_to_host();
  return result;
}

void expect_bf16_close_to_fp32(const std::string& description, const Shape& sample, std::int64_t classes,
                               const Tensor& x, double tolerance) {
  auto model = build_model(ModelDescription::parse(description, "model"), sample, classes, Device{});
  model->init_parameters(5);
  const Result fp32 = run(*model, x);
  Result bf16;
  {
    const ScopedPrecision scoped(Precision::kBFloat16);
    bf16 = run(*model, x);
  }
  const double logits = max_relative_difference(bf16.logits, fp32.logits);
  const double grads = max_relative_difference(bf16.grads, fp32.grads);
  EXPECT_LT(logits, tolerance) << "forward";
  for (const ParamInfo& info : model->parameters()) {
    const auto part = [&](const std::vector<float>& g) {
      return std::vector<float>(g.begin() + info.offset, g.begin() + info.offset + info.numel);
    };
    EXPECT_LT(max_relative_difference(part(bf16.grads), part(fp32.grads)), tolerance) << info.name;
  }
  EXPECT_GT(logits, 0.0) << "bfloat16 gave float32's exact output: it did not run";
  EXPECT_GT(grads, 0.0) << "bfloat16 gave float32's exact gradients: it did not run";
  // Back in float32 the model computes as before (the setting is read at every forward).
  EXPECT_EQ(run(*model, x).logits, fp32.logits);
}

Tensor random_input(const Shape& shape, unsigned seed) {
  Tensor x(shape, Device{});
  x.copy_from_host(random_vector(static_cast<std::size_t>(shape_numel(shape)), seed));
  return x;
}

// One layer on its own, its parameters bound to random values: output, input gradient and parameter gradients
// for L = Σ r·y.
struct LayerResult {
  std::vector<float> y, dx, grads;
};
LayerResult run_layer(Layer& layer, const Tensor& x, std::vector<std::vector<float>>& grads) {
  LayerResult r;
  const Tensor& y = layer.forward(x);
  r.y = y.to_host();
  Tensor dy(y.shape(), Device{});
  dy.copy_from_host(random_vector(r.y.size(), 77));
  r.dx = layer.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  for (const auto& g : grads) r.grads.insert(r.grads.end(), g.begin(), g.end());
  return r;
}

void expect_layer_bf16_close_to_fp32(Layer& layer, const Tensor& x, double tolerance) {
  std::vector<std::vector<float>> values, grads;
  std::vector<ParamBinding> bindings;
  unsigned seed = 20;
  for (const ParamSpec& spec : layer.parameter_specs()) {
    values.push_back(random_vector(static_cast<std::size_t>(shape_numel(spec.shape)), ++seed, -0.3f, 0.3f));
    grads.emplace_back(values.back().size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) bindings.push_back({values[i].data(), grads[i].data()});
  layer.bind_parameters(bindings);
  const LayerResult fp32 = run_layer(layer, x, grads);
  LayerResult bf16;
  {
    const ScopedPrecision scoped(Precision::kBFloat16);
    bf16 = run_layer(layer, x, grads);
  }
  for (const auto& [what, a, b] : {std::tuple{"y", &bf16.y, &fp32.y}, std::tuple{"dx", &bf16.dx, &fp32.dx},
                                   std::tuple{"parameter gradients", &bf16.grads, &fp32.grads}}) {
    const double d = max_relative_difference(*a, *b);
    EXPECT_LT(d, tolerance) << what;
    EXPECT_GT(d, 0.0) << what << ": bfloat16 gave float32's exact values: it did not run";
  }
}

TEST(Bfloat16Compute, LinearPerPositionIsCloseToFloat32) {
  SKIP_WITHOUT_BF16();
  Linear layer(40, 48, Device{}, true, /*per_position=*/true);
  expect_layer_bf16_close_to_fp32(layer, random_input({3, 9, 40}, 7), 1e-2);
}

TEST(Bfloat16Compute, AttentionOverSeveralBlocksIsCloseToFloat32) {
  SKIP_WITHOUT_BF16();
  CausalSelfAttention layer(32, 2, Device{});
  expect_layer_bf16_close_to_fp32(layer, random_input({2, 130, 32}, 8), 1e-2);
}

TEST(Bfloat16Compute, ConvolutionsAreCloseToFloat32) {
  SKIP_WITHOUT_BF16();
  // A first layer of 3 channels (plain x), a blocked 3×3 layer, a 1×1 layer, BatchNorm, pooling and a linear head.
  // No ReLU: a value within rounding of 0 flips its gate, and one flipped unit moves a gradient that is a sum of
  // random-signed terms by far more than bfloat16's tolerance (smooth layers only, so the comparison is fair).
  expect_bf16_close_to_fp32(R"({"layers": [
      {"type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1, "bias": false}, {"type": "batchnorm2d"},
      {"type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
      {"type": "conv2d", "out_channels": 8, "kernel": 1}, {"type": "avgpool2d", "kernel": 2, "stride": 2},
      {"type": "flatten"}, {"type": "linear", "out_features": "classes"}]})",
                            {3, 12, 12}, 10, random_input({4, 3, 12, 12}, 9), 1e-2);
}

TEST(Bfloat16Compute, ConvolutionsRunOneDnnsBfloat16Kernels) {
  SKIP_WITHOUT_BF16();
  for (const auto& [in, kernel, blocked] : {std::tuple{3, 3, false}, std::tuple{16, 3, true}, std::tuple{16, 1, false}}) {
    Conv2d conv(in, 16, kernel, kernel, 1, 1, kernel / 2, kernel / 2, true, Device{});
    std::vector<float> w = random_vector(16 * in * kernel * kernel, 1), b(16), dw(w.size()), db(16);
    const ParamBinding bindings[] = {{w.data(), dw.data()}, {b.data(), db.data()}};
    conv.bind_parameters(bindings);
    const ScopedPrecision scoped(Precision::kBFloat16);
    conv.forward(random_input({2, in, 8, 8}, 3));
    EXPECT_NE(conv.implementation().find("bf16"), std::string::npos)
        << in << " channels, " << kernel << "x" << kernel << (blocked ? " (blocked)" : "") << ": " << conv.implementation();
  }
}

TEST(Bfloat16Compute, ATinyGptWithATiedHeadIsCloseToFloat32) {
  SKIP_WITHOUT_BF16();
  const std::int64_t vocab = 50, t = 64, n = 2;
  auto model = build_model(builtin_model("gpt-nano"), {t}, vocab, Device{});
  model->init_parameters(11);
  std::vector<std::int32_t> ids(n * t), targets(n * t);
  for (std::int64_t i = 0; i < n * t; ++i) {
    ids[i] = static_cast<std::int32_t>((i * 7 + 3) % vocab);
    targets[i] = static_cast<std::int32_t>((i * 11 + 5) % vocab);
  }
  Tensor x({n, t}, Device{}, DType::kInt32), y({n, t}, Device{}, DType::kInt32);
  x.copy_from_host(std::span<const std::int32_t>(ids));
  y.copy_from_host(std::span<const std::int32_t>(targets));
  SoftmaxCrossEntropy loss(Device{});
  const auto loss_and_grads = [&] {
    Tensor dlogits;
    const double l = loss.forward_backward(model->forward(x), y, dlogits).mean_loss();
    model->backward(dlogits);
    return std::make_pair(l, model->grads_to_host());
  };
  const auto [loss32, grads32] = loss_and_grads();
  std::pair<double, std::vector<float>> bf16;
  {
    const ScopedPrecision scoped(Precision::kBFloat16);
    bf16 = loss_and_grads();
  }
  EXPECT_NEAR(bf16.first, loss32, 1e-2 * loss32);
  EXPECT_NE(bf16.first, loss32);
  EXPECT_LT(max_relative_difference(bf16.second, grads32), 3e-2);
}

TEST(Bfloat16Compute, IsRefusedNamingTheInstructionSetWhereOneDnnHasNoKernels) {
  if (cpu_bf16_problem().empty())
    GTEST_SKIP() << "this CPU has bfloat16 kernels (" << cpu_bf16_kernel()
                 << "); the refusal runs under ONEDNN_MAX_CPU_ISA=AVX2 (test_nn_precision_avx2)";
  try {
    set_compute_precision(Precision::kBFloat16);
    FAIL() << "bfloat16 accepted without kernels";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("no bfloat16 matrix kernels for " + cpu_isa_name()), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("AVX-512"), std::string::npos) << e.message();
  }
  EXPECT_EQ(compute_precision(), Precision::kFloat32);
  EXPECT_EQ(cpu_bf16_kernel(), "none");
}

}  // namespace
}  // namespace mirror::nn
