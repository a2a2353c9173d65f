// test_transformer_layers.cc — the first language-model layers: GELU (tanh approximation) against the formula
// in double and its derivative against central finite differences of it; LayerNorm over the last axis of
// [T, C] samples against a forward in double, and its input, weight and bias gradients against central finite
// differences of that forward (in double), accumulation and the order in which it reports its gradients; both
// as model-file types; Linear per position of [T, C] samples against plain loops; Embedding of int32 ids, and a
// tiny language model (embedding, layernorm, gelu, a head tied to the embedding) whose per-token loss gradients
// match central finite differences; the built-in GPTs' parameter counts and GPT-2 initialisation.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/embedding.h"
#include "mirror/nn/gelu.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/layer_norm.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/model_description.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

double gelu_ref(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

TEST(Gelu, ForwardAndBackwardMatchTheFormula) {
  Gelu gelu{Device{}};
  const std::vector<float> xv = random_vector(2 * 3 * 5, 1, -4.0f, 4.0f), gv = random_vector(30, 2);
  Tensor x({2, 3, 5}, Device{}), dy({2, 3, 5}, Device{});
  x.copy_from_host(xv);
  dy.copy_from_host(gv);
  const std::vector<float> y = gelu.forward(x).to_host();
  const std::vector<float> dx = gelu.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    EXPECT_NEAR(y[i], gelu_ref(xv[i]), 1e-6 + 1e-6 * std::fabs(gelu_ref(xv[i]))) << i;
    const double h = 1e-6, numeric = (gelu_ref(xv[i] + h) - gelu_ref(xv[i] - h)) / (2 * h);
    EXPECT_NEAR(dx[i], gv[i] * numeric, 1e-5) << i;
  }
}

// LayerNorm of each row of C values in double.
std::vector<double> layer_norm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                   const std::vector<double>& beta, std::size_t c, double eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / c; ++r) {
    double mean = 0, var = 0;
    for (std::size_t j = 0; j < c; ++j) mean += x[r * c + j];
    mean /= static_cast<double>(c);
    for (std::size_t j = 0; j < c; ++j) var += (x[r * c + j] - mean) * (x[r * c + j] - mean);
    var /= static_cast<double>(c);
    for (std::size_t j = 0; j < c; ++j) y[r * c + j] = (x[r * c + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  }
  return y;
}

TEST(LayerNorm, ForwardAndGradientsMatchADoubleReference) {
  const std::size_t n = 2, t = 3, c = 6;
  LayerNorm ln(c, Device{});
  EXPECT_EQ(ln.output_sample_shape({t, c}), (Shape{t, c}));
  EXPECT_THROW(ln.output_sample_shape({t, c + 1}), Error);
  std::vector<float> gamma = random_vector(c, 3, 0.5f, 1.5f), beta = random_vector(c, 4), dgamma(c), dbeta(c);
  ln.bind_parameters(std::vector<ParamBinding>{{gamma.data(), dgamma.data()}, {beta.data(), dbeta.data()}});
  const std::vector<float> xv = random_vector(n * t * c, 5, -2.0f, 3.0f), rv = random_vector(n * t * c, 6);
  Tensor x({static_cast<std::int64_t>(n), static_cast<std::int64_t>(t), static_cast<std::int64_t>(c)}, Device{});
  Tensor dy(x.shape(), Device{});
  x.copy_from_host(xv);
  dy.copy_from_host(rv);
  const std::vector<float> y = ln.forward(x).to_host();
  std::vector<double> xd(xv.begin(), xv.end()), gd(gamma.begin(), gamma.end()), bd(beta.begin(), beta.end());
  const std::vector<double> want = layer_norm_ref(xd, gd, bd, c, 1e-5);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  std::vector<std::size_t> order;
  const std::vector<float> dx =
      ln.backward(dy, GradMode::kOverwrite, true, [&](std::size_t i) { order.push_back(i); })->to_host();
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 0}));
  // L = Σ r·y; its derivative by each value, by central differences of the double forward.
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& gg, const std::vector<double>& bb) {
    const std::vector<double> yy = layer_norm_ref(xx, gg, bb, c, 1e-5);
    double s = 0;
    for (std::size_t i = 0; i < yy.size(); ++i) s += rv[i] * yy[i];
    return s;
  };
  auto numeric = [&](std::vector<double>& v, std::size_t i) {
    const double saved = v[i], h = 1e-6;
    v[i] = saved + h;
    const double up = loss(xd, gd, bd);
    v[i] = saved - h;
    const double down = loss(xd, gd, bd);
    v[i] = saved;
    return (up - down) / (2 * h);
  };
  for (std::size_t i = 0; i < xd.size(); ++i) EXPECT_NEAR(dx[i], numeric(xd, i), 1e-4) << "dx " << i;
  for (std::size_t j = 0; j < c; ++j) {
    EXPECT_NEAR(dgamma[j], numeric(gd, j), 1e-4) << "dgamma " << j;
    EXPECT_NEAR(dbeta[j], numeric(bd, j), 1e-4) << "dbeta " << j;
  }
  // Accumulation adds the same gradients again.
  const std::vector<float> once = dgamma;
  ln.backward(dy, GradMode::kAccumulate, false, {});
  for (std::size_t j = 0; j < c; ++j) EXPECT_NEAR(dgamma[j], 2 * once[j], 1e-5) << j;
}

TEST(LayerNorm, ModelFileTypesTrainInAGraph) {
  // [4] samples: ln, linear, gelu, a skip connection and the head; γ starts at 1, β at 0; no decay on them.
  auto model = build_model(ModelDescription::parse(R"({"layers": [
    {"type": "layernorm", "name": "ln"},
    {"type": "linear", "name": "fc", "out_features": 4},
    {"type": "gelu", "name": "act"},
    {"type": "add", "name": "skip", "inputs": ["act", "input"]},
    {"type": "linear", "name": "head", "out_features": "classes"}]})", "test"), {4}, 3, Device{});
  model->init_parameters(7);
  const std::vector<float> p = model->params_to_host();
  EXPECT_EQ(std::vector<float>(p.begin(), p.begin() + 4), std::vector<float>(4, 1.0f));
  EXPECT_EQ(std::vector<float>(p.begin() + 4, p.begin() + 8), std::vector<float>(4, 0.0f));
  EXPECT_TRUE(model->parameters()[0].normalization);
  EXPECT_NE(layer_table(*model).find("act (gelu)"), std::string::npos);
  try {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "layernorm", "eps": 0},
      {"type": "linear", "out_features": "classes"}]})", "m.json"), {4}, 3, Device{});
    FAIL() << "eps 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("layer 'layernorm1' (layernorm)"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("\"eps\" must be > 0"), std::string::npos) << e.message();
  }
}

TEST(Linear, MapsEachPositionOfASequence) {
  const std::int64_t n = 2, t = 3, in = 4, out = 5;
  Linear fc(in, out, Device{}, true, true);
  EXPECT_EQ(fc.output_sample_shape({t, in}), (Shape{t, out}));
  EXPECT_THROW(fc.output_sample_shape({t * in}), Error);
  std::vector<float> w = random_vector(out * in, 11), b = random_vector(out, 12), dw(out * in), db(out);
  fc.bind_parameters(std::vector<ParamBinding>{{w.data(), dw.data()}, {b.data(), db.data()}});
  const std::vector<float> xv = random_vector(n * t * in, 13), gv = random_vector(n * t * out, 14);
  Tensor x({n, t, in}, Device{}), dy({n, t, out}, Device{});
  x.copy_from_host(xv);
  dy.copy_from_host(gv);
  const Tensor& y = fc.forward(x);
  EXPECT_EQ(y.shape(), (Shape{n, t, out}));
  const std::vector<float> yv = y.to_host();
  const std::vector<float> dx = fc.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  std::vector<double> dw_ref(out * in, 0.0), db_ref(out, 0.0), dx_ref(n * t * in, 0.0);
  for (std::int64_t r = 0; r < n * t; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double v = b[o];
      for (std::int64_t i = 0; i < in; ++i) {
        v += static_cast<double>(w[o * in + i]) * xv[r * in + i];
        dw_ref[o * in + i] += static_cast<double>(gv[r * out + o]) * xv[r * in + i];
        dx_ref[r * in + i] += static_cast<double>(gv[r * out + o]) * w[o * in + i];
      }
      db_ref[o] += gv[r * out + o];
      EXPECT_NEAR(yv[r * out + o], v, 1e-5) << r << "," << o;
    }
  for (std::size_t k = 0; k < dw.size(); ++k) EXPECT_NEAR(dw[k], dw_ref[k], 1e-5) << k;
  for (std::size_t k = 0; k < db.size(); ++k) EXPECT_NEAR(db[k], db_ref[k], 1e-5) << k;
  for (std::size_t k = 0; k < dx.size(); ++k) EXPECT_NEAR(dx[k], dx_ref[k], 1e-5) << k;
}

TEST(Embedding, RowsOfTheWeightAndTheirGradientSums) {
  Embedding emb(5, 3, Device{});
  EXPECT_EQ(emb.output_sample_shape({4}), (Shape{4, 3}));
  std::vector<float> w = random_vector(15, 21), dw(15, 7.0f);
  emb.bind_parameters(std::vector<ParamBinding>{{w.data(), dw.data()}});
  const std::vector<std::int32_t> ids = {4, 0, 4, 2};
  Tensor x({2, 2}, Device{}, DType::kInt32);
  x.copy_from_host(std::span<const std::int32_t>(ids));
  const std::vector<float> y = emb.forward(x).to_host();
  for (std::size_t p = 0; p < ids.size(); ++p)
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(y[p * 3 + j], w[ids[p] * 3 + j]);
  const std::vector<float> gv = random_vector(12, 22);
  Tensor dy({2, 2, 3}, Device{});
  dy.copy_from_host(gv);
  EXPECT_EQ(emb.backward(dy, GradMode::kOverwrite, true, {}), nullptr);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_FLOAT_EQ(dw[4 * 3 + j], gv[0 * 3 + j] + gv[2 * 3 + j]);  // token 4 at positions 0 and 2
    EXPECT_FLOAT_EQ(dw[0 * 3 + j], gv[1 * 3 + j]);
    EXPECT_EQ(dw[1 * 3 + j], 0.0f);
  }
  const std::vector<std::int32_t> bad = {1, 5, 0, 0};
  x.copy_from_host(std::span<const std::int32_t>(bad));
  try {
    emb.forward(x);
    FAIL() << "id 5 accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("token id 5 at position 1 of sample 0 is outside [0, 5)"), std::string::npos) << e.message();
  }
}

TEST(Embedding, ATinyLanguageModelWithATiedHead) {
  const std::int64_t vocab = 7, t = 3, n = 2;
  auto model = build_model(ModelDescription::parse(R"({"layers": [
    {"type": "embedding", "name": "wte", "vocab": "classes", "channels": 4},
    {"type": "layernorm", "name": "ln"},
    {"type": "linear", "name": "fc", "out_features": 4},
    {"type": "gelu", "name": "act"},
    {"type": "add", "name": "res", "inputs": ["wte", "act"]},
    {"type": "linear", "name": "head", "out_features": "classes", "bias": false, "tied_to": "wte"}]})", "lm"),
                           {t}, vocab, Device{});
  model->init_parameters(3);
  EXPECT_EQ(model->parameters().front().name, "wte.weight");
  EXPECT_EQ(model->num_parameters(), vocab * 4 + 4 + 4 + 4 * 4 + 4);  // the head's weight is wte's
  const std::vector<std::int32_t> ids = {1, 6, 3, 0, 2, 2}, targets = {6, 3, 0, 2, 2, 5};
  Tensor x({n, t}, Device{}, DType::kInt32), y({n, t}, Device{}, DType::kInt32);
  x.copy_from_host(std::span<const std::int32_t>(ids));
  y.copy_from_host(std::span<const std::int32_t>(targets));
  SoftmaxCrossEntropy loss(Device{});
  Tensor dlogits;
  const Tensor& logits = model->forward(x);
  EXPECT_EQ(logits.shape(), (Shape{n, t, vocab}));
  loss.forward_backward(logits, y, dlogits);
  model->backward(dlogits);
  const std::vector<float> grads = model->grads_to_host();
  std::vector<float> params = model->params_to_host();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float saved = params[i];
    auto mean_loss = [&](float v) {
      params[i] = v;
      model->params_from_host(params);
      return loss.forward(model->forward(x), y).mean_loss();
    };
    const double h = 1e-3, numeric = (mean_loss(saved + h) - mean_loss(saved - h)) / (2 * h);
    params[i] = saved;
    model->params_from_host(params);
    EXPECT_NEAR(grads[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << "parameter " << i;
  }
}

// The built-in GPTs: parameter counts against the formula V·C + T·C + L·(12C² + 13C) + 2C (a tied head counted
// once) and gpt2-small against GPT-2 124M's published 124,439,808; GPT-2's initialisation on gpt-mini (L 6):
// weights N(0, 0.02), the two residual projections N(0, 0.02/√(2L)), biases 0, LayerNorm 1 and 0.
TEST(BuiltinGpt, ParameterCountsAndGpt2Initialisation) {
  struct Size { const char* name; std::int64_t layers, channels, context, vocab; };
  for (const Size& m : {Size{"gpt-nano", 4, 128, 64, 256}, Size{"gpt-mini", 6, 384, 256, 256},
                        Size{"gpt2-small", 12, 768, 1024, 50257}}) {
    const std::int64_t C = m.channels;
    const std::int64_t want = m.vocab * C + m.context * C + m.layers * (12 * C * C + 13 * C) + 2 * C;
    EXPECT_EQ(build_graph(builtin_model(m.name), {m.context}, m.vocab, Device{}).num_parameters(), want) << m.name;
  }
  EXPECT_EQ(build_graph(builtin_model("gpt2-small"), {1024}, 50257, Device{}).num_parameters(), 124439808);

  auto model = build_model(builtin_model("gpt-mini"), {256}, 256, Device{});
  model->init_parameters(4);
  const std::vector<float> values = model->params_to_host();
  const double residual_std = 0.02 / std::sqrt(2.0 * 6);
  for (const ParamInfo& p : model->parameters()) {
    double sum = 0.0, squares = 0.0;
    for (std::int64_t i = 0; i < p.numel; ++i) {
      sum += values[p.offset + i];
      squares += static_cast<double>(values[p.offset + i]) * values[p.offset + i];
    }
    const double mean = sum / p.numel, std = std::sqrt(squares / p.numel - mean * mean);
    const auto ends = [&](const std::string& tail) {
      return p.name.size() >= tail.size() && p.name.compare(p.name.size() - tail.size(), tail.size(), tail) == 0;
    };
    const bool layernorm = p.name.rfind("ln_f.", 0) == 0 || p.name.find("_ln") != std::string::npos;
    if (layernorm && ends(".weight")) {
      EXPECT_TRUE(mean == 1.0 && std == 0.0) << p.name << ": LayerNorm's scale starts at 1";
    } else if (ends(".bias")) {
      EXPECT_TRUE(mean == 0.0 && std == 0.0) << p.name << ": biases start at 0";
    } else {
      const bool residual = ends("_attn.proj.weight") || ends("_proj.weight");  // attention's, the MLP's
      const double expected = residual ? residual_std : 0.02;
      EXPECT_NEAR(std, expected, 0.03 * expected) << p.name;
      EXPECT_NEAR(mean, 0.0, 0.05 * expected) << p.name;
    }
  }
}

}  // namespace
}  // namespace mirror::nn
