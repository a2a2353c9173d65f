// test_attention.cc — causal self-attention and position embedding against independent references:
// a forward written here in double with the full T×T score matrix (projection, per-head causal softmax, output
// projection, plain loops), its gradients by central finite differences of that forward, on odd shapes (one head,
// C not a multiple of 8, T not a multiple of the kernel's 64-position block, batch 1); causality (a later position
// never changes an earlier output); the order in which the layer reports its gradients; position embedding
// against plain loops, and its refusal of a window longer than its context.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/causal_self_attention.h"
#include "mirror/nn/position_embedding.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

struct Shapes {
  std::int64_t n, t, c, h;
};

// Parameters in the layer's order: qkv.weight [3C, C], qkv.bias [3C], proj.weight [C, C], proj.bias [C].
struct Params {
  std::vector<double> wqkv, bqkv, wproj, bproj;
};

// y = proj(attention(qkv(x))) in double with the whole T×T matrix.
std::vector<double> attention_ref(const Shapes& s, const std::vector<double>& x, const Params& p) {
  const std::int64_t C = s.c, T = s.t, d = C / s.h;
  std::vector<double> y(s.n * T * C, 0.0);
  for (std::int64_t n = 0; n < s.n; ++n) {
    std::vector<double> qkv(T * 3 * C), att(T * C, 0.0);
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t o = 0; o < 3 * C; ++o) {
        double v = p.bqkv[o];
        for (std::int64_t i = 0; i < C; ++i) v += p.wqkv[o * C + i] * x[(n * T + t) * C + i];
        qkv[t * 3 * C + o] = v;
      }
    for (std::int64_t h = 0; h < s.h; ++h)
      for (std::int64_t i = 0; i < T; ++i) {
        std::vector<double> score(i + 1);
        double mx = -1e300;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c) dot += qkv[i * 3 * C + h * d + c] * qkv[j * 3 * C + C + h * d + c];
          score[j] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, score[j]);
        }
        double sum = 0;
        for (double& v : score) sum += (v = std::exp(v - mx));
        for (std::int64_t j = 0; j <= i; ++j)
          for (std::int64_t c = 0; c < d; ++c) att[i * C + h * d + c] += score[j] / sum * qkv[j * 3 * C + 2 * C + h * d + c];
      }
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t o = 0; o < C; ++o) {
        double v = p.bproj[o];
        for (std::int64_t i = 0; i < C; ++i) v += p.wproj[o * C + i] * att[t * C + i];
        y[(n * T + t) * C + o] = v;
      }
  }
  return y;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The layer on random data: its output, input gradient and parameter gradients for L = Σ r·y, checked against
// the reference forward and central differences of it at `probes` coordinates of x and of every parameter.
void check_layer(const Shapes& s, int probes, double fd_tolerance) {
  CausalSelfAttention layer(s.c, s.h, Device{});
  EXPECT_EQ(layer.output_sample_shape({s.t, s.c}), (Shape{s.t, s.c}));
  std::vector<std::vector<float>> values, grads;
  std::vector<ParamBinding> bindings;
  unsigned seed = 10;
  for (const ParamSpec& spec : layer.parameter_specs()) {
    values.push_back(random_vector(static_cast<std::size_t>(shape_numel(spec.shape)), ++seed, -0.5f, 0.5f));
    grads.emplace_back(values.back().size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) bindings.push_back({values[i].data(), grads[i].data()});
  layer.bind_parameters(bindings);
  const std::vector<float> xv = random_vector(s.n * s.t * s.c, 3, -1.0f, 1.0f), rv = random_vector(s.n * s.t * s.c, 4);
  Tensor x({s.n, s.t, s.c}, Device{}), dy({s.n, s.t, s.c}, Device{});
  x.copy_from_host(xv);
  dy.copy_from_host(rv);
  const std::vector<float> y = layer.forward(x).to_host();
  Params p{to_double(values[0]), to_double(values[1]), to_double(values[2]), to_double(values[3])};
  const std::vector<double> want = attention_ref(s, to_double(xv), p);
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << i;

  std::vector<std::size_t> order;
  const std::vector<float> dx =
      layer.backward(dy, GradMode::kOverwrite, true, [&](std::size_t i) { order.push_back(i); })->to_host();
  EXPECT_EQ(order, (std::vector<std::size_t>{3, 2, 1, 0}));
  auto loss = [&](const std::vector<double>& xx, const Params& pp) {
    const std::vector<double> yy = attention_ref(s, xx, pp);
    double l = 0;
    for (std::size_t i = 0; i < yy.size(); ++i) l += rv[i] * yy[i];
    return l;
  };
  const double h = 1e-5;
  auto probe = [&](std::vector<double>& v, std::size_t i, const std::vector<double>& xx, const Params& pp) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss(xx, pp);
    v[i] = keep - h;
    const double down = loss(xx, pp);
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  std::vector<double> xd = to_double(xv);
  std::vector<double>* param_values[4] = {&p.wqkv, &p.bqkv, &p.wproj, &p.bproj};
  for (int k = 0; k < probes; ++k) {
    const std::size_t i = static_cast<std::size_t>(k * 7919) % xd.size();
    EXPECT_NEAR(dx[i], probe(xd, i, xd, p), fd_tolerance) << "dx[" << i << "]";
    for (int q = 0; q < 4; ++q) {
      std::vector<double>& v = *param_values[q];
      const std::size_t j = static_cast<std::size_t>(k * 104729) % v.size();
      EXPECT_NEAR(grads[q][j], probe(v, j, xd, p), fd_tolerance) << "parameter " << q << " [" << j << "]";
    }
  }
}

TEST(CausalSelfAttention, SmallShapesMatchTheFullMatrixReferenceAndFiniteDifferences) {
  check_layer({2, 5, 6, 2}, 60, 2e-4);  // C not a multiple of 8, head size 3
  check_layer({1, 3, 4, 1}, 40, 2e-4);  // one head, batch 1
}

TEST(CausalSelfAttention, SeveralBlocksOfPositionsMatchTheReference) {
  check_layer({1, 130, 8, 2}, 30, 5e-4);  // 64 + 64 + 2 positions: a partial last block
  check_layer({2, 67, 12, 3}, 20, 5e-4);
}

TEST(CausalSelfAttention, ALaterPositionNeverChangesAnEarlierOutput) {
  const Shapes s{1, 70, 8, 2};
  CausalSelfAttention layer(s.c, s.h, Device{});
  std::vector<std::vector<float>> values, grads;
  std::vector<ParamBinding> bindings;
  for (const ParamSpec& spec : layer.parameter_specs()) {
    values.push_back(random_vector(static_cast<std::size_t>(shape_numel(spec.shape)), 7, -0.5f, 0.5f));
    grads.emplace_back(values.back().size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) bindings.push_back({values[i].data(), grads[i].data()});
  layer.bind_parameters(bindings);
  std::vector<float> xv = random_vector(s.t * s.c, 8);
  Tensor x({s.n, s.t, s.c}, Device{});
  x.copy_from_host(xv);
  const std::vector<float> before = layer.forward(x).to_host();
  const std::int64_t changed = 66;
  for (std::int64_t c = 0; c < s.c; ++c) xv[changed * s.c + c] += 3.0f;
  x.copy_from_host(xv);
  const std::vector<float> after = layer.forward(x).to_host();
  for (std::int64_t i = 0; i < changed * s.c; ++i) ASSERT_EQ(before[i], after[i]) << i;
  EXPECT_NE(before[changed * s.c], after[changed * s.c]);
}

TEST(CausalSelfAttention, RefusesChannelsThatHeadsDoNotDivide) {
  EXPECT_THROW(CausalSelfAttention(10, 3, Device{}), Error);
  CausalSelfAttention layer(8, 2, Device{});
  EXPECT_THROW(layer.output_sample_shape({4, 6}), Error);
}

TEST(PositionEmbedding, AddsARowPerPositionAndSumsItsGradientOverTheBatch) {
  const std::int64_t n = 3, t = 5, c = 7, context = 9;
  PositionEmbedding layer(context, c, Device{});
  EXPECT_EQ(layer.output_sample_shape({t, c}), (Shape{t, c}));
  EXPECT_THROW(layer.output_sample_shape({context + 1, c}), Error);
  std::vector<float> w = random_vector(context * c, 1), dw(context * c, 5.0f);
  layer.bind_parameters(std::vector<ParamBinding>{{w.data(), dw.data()}});
  const std::vector<float> xv = random_vector(n * t * c, 2), gv = random_vector(n * t * c, 3);
  Tensor x({n, t, c}, Device{}), dy({n, t, c}, Device{});
  x.copy_from_host(xv);
  dy.copy_from_host(gv);
  const std::vector<float> y = layer.forward(x).to_host();
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < t * c; ++i) EXPECT_EQ(y[b * t * c + i], xv[b * t * c + i] + w[i]);
  const std::vector<float> dx = layer.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  EXPECT_EQ(dx, gv);
  for (std::int64_t i = 0; i < context * c; ++i) {
    double want = 0;
    for (std::int64_t b = 0; b < n && i < t * c; ++b) want += gv[b * t * c + i];
    EXPECT_NEAR(dw[i], want, 1e-6) << i;
  }
}

}  // namespace
}  // namespace mirror::nn
