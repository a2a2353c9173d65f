// test_model_graph.cc — the model as a graph: named inputs, the add and concat merges, an output used by
// several layers (its gradients summed), a value used twice by one merge, parameters shared by two layers
// (tied weights: stored once, gradient the sum of both uses, reported once after the owner's backward), the
// model's output named, the layer table's wiring notes, the wiring errors, and when the logits may hold their
// gradient. Each model is checked against a
// forward written by hand in double and gradients against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>

#include "mirror/error.h"
#include "mirror/nn/concat.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model_build.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;
using Vec = std::vector<double>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

std::unique_ptr<Model> build(const std::string& json, const Shape& input, std::int64_t classes) {
  auto model = build_model(ModelDescription::parse(json, "test"), input, classes, Device{});
  model->init_parameters(11);
  return model;
}

// The parameter `name` of `model` as doubles.
Vec param(const Model& model, const std::vector<float>& flat, const std::string& name) {
  for (const ParamInfo& p : model.parameters())
    if (p.name == name) return Vec(flat.begin() + p.offset, flat.begin() + p.offset + p.numel);
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

Vec affine(const Vec& w, const Vec* b, const Vec& v) {
  const std::size_t in = v.size(), out = w.size() / in;
  Vec r(out, 0.0);
  for (std::size_t o = 0; o < out; ++o) {
    r[o] = b ? (*b)[o] : 0.0;
    for (std::size_t i = 0; i < in; ++i) r[o] += w[o * in + i] * v[i];
  }
  return r;
}

Vec relu(Vec v) {
  for (double& a : v) a = std::max(a, 0.0);
  return v;
}

Vec plus(const Vec& a, const Vec& b) {
  Vec r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] + b[i];
  return r;
}

Vec joined(Vec a, const Vec& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every gradient against a central finite difference of the mean loss; the ready indices each once, decreasing.
void check_gradients(Model& model, const Tensor& x, const std::vector<std::int32_t>& labels) {
  SoftmaxCrossEntropy loss(Device{});
  Tensor dlogits;
  loss.forward_backward(model.forward(x), labels, dlogits);
  std::vector<std::size_t> order;
  model.backward(dlogits, GradMode::kOverwrite, [&](std::size_t i) { order.push_back(i); });
  ASSERT_EQ(order.size(), model.parameters().size());
  for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], order.size() - 1 - k);
  const std::vector<float> grads = model.grads_to_host();
  std::vector<float> params = model.params_to_host();
  const double h = 1e-3;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float saved = params[i];
    auto mean_loss = [&](float v) {
      params[i] = v;
      model.params_from_host(params);
      return loss.forward(model.forward(x), labels).mean_loss();
    };
    const double numeric = (mean_loss(saved + h) - mean_loss(saved - h)) / (2 * h);
    params[i] = saved;
    model.params_from_host(params);
    EXPECT_NEAR(grads[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << "parameter " << i;
  }
}

// The graph-core issue's example, with smaller widths: two branches from flat, summed, joined with flat.
constexpr const char* kBranching = R"({"layers": [
  {"type": "flatten", "name": "flat"},
  {"type": "linear", "name": "a", "out_features": 4},
  {"type": "relu", "name": "ra"},
  {"type": "linear", "name": "b", "inputs": ["flat"], "out_features": 4},
  {"type": "add", "name": "sum", "inputs": ["ra", "b"]},
  {"type": "concat", "name": "cat", "inputs": ["sum", "flat"]},
  {"type": "linear", "name": "out", "out_features": "classes"}
]})";

TEST(ModelGraph, BranchesMergeAsAHandWrittenForward) {
  auto model = build(kBranching, {5}, 3);
  EXPECT_EQ(model->layer_output_shape(5), (Shape{9}));
  const std::vector<float> xv = random_vector(2 * 5, 3);
  Tensor x({2, 5}, Device{});
  x.copy_from_host(xv);
  const std::vector<float> z = model->forward(x).to_host();
  const std::vector<float> p = model->params_to_host();
  const Vec aw = param(*model, p, "a.weight"), ab = param(*model, p, "a.bias"), bw = param(*model, p, "b.weight"),
            bb = param(*model, p, "b.bias"), ow = param(*model, p, "out.weight"), ob = param(*model, p, "out.bias");
  for (int r = 0; r < 2; ++r) {
    const Vec v(xv.begin() + r * 5, xv.begin() + r * 5 + 5);
    const Vec logits = affine(ow, &ob, joined(plus(relu(affine(aw, &ab, v)), affine(bw, &bb, v)), v));
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(z[r * 3 + c], logits[c], 1e-5) << r << "," << c;
  }
}

TEST(ModelGraph, BranchesGradientsMatchFiniteDifferences) {
  // As given, and with a linear layer as the value three layers take (its gradient the sum of three).
  std::string with_linear = kBranching;
  with_linear.replace(with_linear.find(R"("type": "flatten")"), std::string(R"("type": "flatten")").size(),
                      R"("type": "linear", "out_features": 5)");
  for (const std::string& text : {std::string(kBranching), with_linear}) {
    auto model = build(text, {5}, 3);
    Tensor x({3, 5}, Device{});
    x.copy_from_host(random_vector(15, 4));
    check_gradients(*model, x, {0, 2, 1});
  }
}

TEST(ModelGraph, AValueUsedTwiceByOneMerge) {
  auto model = build(R"({"layers": [
    {"type": "linear", "name": "a", "out_features": 4},
    {"type": "add", "name": "twice", "inputs": ["a", "a"]},
    {"type": "linear", "name": "out", "out_features": "classes"}]})", {3}, 2);
  const std::vector<float> xv = random_vector(3, 5);
  Tensor x({1, 3}, Device{});
  x.copy_from_host(xv);
  const std::vector<float> z = model->forward(x).to_host(), p = model->params_to_host();
  const Vec aw = param(*model, p, "a.weight"), ab = param(*model, p, "a.bias"), ow = param(*model, p, "out.weight"),
            ob = param(*model, p, "out.bias");
  const Vec h = affine(aw, &ab, Vec(xv.begin(), xv.end()));
  const Vec logits = affine(ow, &ob, plus(h, h));
  for (int c = 0; c < 2; ++c) EXPECT_NEAR(z[c], logits[c], 1e-5);
  Tensor xb({3, 3}, Device{});
  xb.copy_from_host(random_vector(9, 6));
  check_gradients(*model, xb, {1, 0, 1});
}

TEST(ModelGraph, TheModelInputFeedsSeveralLayers) {
  auto model = build(R"({"layers": [
    {"type": "linear", "name": "a", "out_features": 3},
    {"type": "linear", "name": "b", "inputs": ["input"], "out_features": 3},
    {"type": "concat", "name": "cat", "inputs": ["a", "b", "input"]},
    {"type": "relu", "name": "r"},
    {"type": "linear", "name": "out", "out_features": "classes"}]})", {4}, 3);
  EXPECT_EQ(model->layer_output_shape(2), (Shape{10}));
  Tensor x({2, 4}, Device{});
  x.copy_from_host(random_vector(8, 7));
  check_gradients(*model, x, {2, 0});
}

// fc2 uses fc1's weight and bias: the forward uses the same values twice, the gradient is the sum of both uses.
constexpr const char* kTied = R"({"layers": [
  {"type": "linear", "name": "fc1", "out_features": 4},
  {"type": "relu", "name": "r1"},
  {"type": "linear", "name": "fc2", "out_features": 4, "tied_to": "fc1"},
  {"type": "relu", "name": "r2"},
  {"type": "linear", "name": "out", "out_features": "classes"}]})";

TEST(ModelGraph, TiedParametersAreStoredOnceAndUsedTwice) {
  auto model = build(kTied, {4}, 3);
  std::vector<std::string> names;
  for (const ParamInfo& p : model->parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "out.weight", "out.bias"}));
  EXPECT_EQ(model->num_parameters(), 4 * 4 + 4 + 3 * 4 + 3);
  const std::vector<float> xv = random_vector(4, 8);
  Tensor x({1, 4}, Device{});
  x.copy_from_host(xv);
  const std::vector<float> z = model->forward(x).to_host(), p = model->params_to_host();
  const Vec w = param(*model, p, "fc1.weight"), b = param(*model, p, "fc1.bias"), ow = param(*model, p, "out.weight"),
            ob = param(*model, p, "out.bias");
  const Vec logits = affine(ow, &ob, relu(affine(w, &b, relu(affine(w, &b, Vec(xv.begin(), xv.end()))))));
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(z[c], logits[c], 1e-5);
  EXPECT_NE(layer_table(*model).find("tied to fc1"), std::string::npos) << layer_table(*model);
}

TEST(ModelGraph, TiedGradientsAreTheSumOfBothUses) {
  auto model = build(kTied, {4}, 3);
  Tensor x({3, 4}, Device{});
  x.copy_from_host(random_vector(12, 9));
  check_gradients(*model, x, {0, 1, 2});
}

TEST(ModelGraph, TiedGradientsAccumulateLikeOthers) {
  auto model = build(kTied, {4}, 3);
  Tensor x({2, 4}, Device{});
  x.copy_from_host(random_vector(8, 10));
  SoftmaxCrossEntropy loss(Device{});
  Tensor dlogits;
  const std::vector<std::int32_t> labels = {1, 2};
  loss.forward_backward(model->forward(x), labels, dlogits);
  model->backward(dlogits, GradMode::kOverwrite);
  const std::vector<float> once = model->grads_to_host();
  model->backward(dlogits, GradMode::kAccumulate);
  const std::vector<float> twice = model->grads_to_host();
  for (std::size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-6 + 1e-5 * std::fabs(once[i]));
}

TEST(ModelGraph, ConcatJoinsAlongTheFeatureAxis) {
  Concat cat{Device{}};
  // [T, C] samples join along C; [C, H, W] along C.
  const Shape ab[] = {{2, 3}, {2, 4}};
  EXPECT_EQ(cat.output_sample_shape_of(ab), (Shape{2, 7}));
  const Shape chw[] = {{1, 2, 2}, {3, 2, 2}};
  EXPECT_EQ(cat.output_sample_shape_of(chw), (Shape{4, 2, 2}));
  const Shape misfit[] = {{2, 3}, {3, 3}};
  EXPECT_NE(error_of([&] { cat.output_sample_shape_of(misfit); }).find("[3, 3] (input 2)"), std::string::npos);
  const std::vector<float> av = random_vector(2 * 2 * 3, 1), bv = random_vector(2 * 2 * 4, 2);
  Tensor a({2, 2, 3}, Device{}), b({2, 2, 4}, Device{});
  a.copy_from_host(av);
  b.copy_from_host(bv);
  const Tensor* xs[] = {&a, &b};
  const std::vector<float> y = cat.forward_inputs(xs).to_host();
  ASSERT_EQ(y.size(), 2u * 2 * 7);
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 2; ++t)
      for (int c = 0; c < 7; ++c) {
        const float want = c < 3 ? av[(n * 2 + t) * 3 + c] : bv[(n * 2 + t) * 4 + c - 3];
        EXPECT_EQ(y[(n * 2 + t) * 7 + c], want) << n << "," << t << "," << c;
      }
  Tensor dy({2, 2, 7}, Device{});
  dy.copy_from_host(y);
  const auto dxs = cat.backward_inputs(dy, GradMode::kOverwrite, true, {});
  EXPECT_EQ(dxs[0]->to_host(), av);
  EXPECT_EQ(dxs[1]->to_host(), bv);
}

TEST(ModelGraph, ANamedOutputAndJsonRoundTrip) {
  const std::string text = R"({"layers": [
    {"type": "linear", "name": "a", "out_features": 3},
    {"type": "linear", "name": "b", "inputs": ["input"], "out_features": 3, "tied_to": "a"},
    {"type": "add", "name": "sum", "inputs": ["a", "b"]}], "output": "sum"})";
  const ModelDescription d = ModelDescription::parse(text, "test");
  EXPECT_EQ(d.output_index(), 2u);
  const ModelDescription again = ModelDescription::parse(d.to_json(), "again");
  EXPECT_EQ(again.to_json(), d.to_json());
  EXPECT_EQ(again.layers[1].inputs, (std::vector<std::string>{"input"}));
  EXPECT_EQ(again.layers[1].tied_to, "a");
  EXPECT_EQ(again.output, "sum");
  auto model = build(text, {4}, 3);
  EXPECT_EQ(model->output_layer(), 2u);
  const std::string table = layer_table(*model);
  EXPECT_NE(table.find("<- a, b"), std::string::npos) << table;
  EXPECT_NE(table.find("<- input"), std::string::npos) << table;
}

// The loss may write its gradient over the logits only behind a linear output layer that no other node reads.
TEST(ModelGraph, LogitsHoldTheirGradientOnlyBehindALinearOutput) {
  EXPECT_TRUE(build(R"({"layers": [{"type": "linear", "name": "a", "out_features": 5}, {"type": "relu"},
                                  {"type": "linear", "name": "b", "out_features": 3}]})", {4}, 3)
                  ->logits_may_hold_their_gradient());
  EXPECT_FALSE(build(R"({"layers": [{"type": "linear", "name": "a", "out_features": 3}, {"type": "relu"}]})", {4}, 3)
                   ->logits_may_hold_their_gradient());
  EXPECT_FALSE(build(R"({"layers": [
    {"type": "linear", "name": "a", "out_features": 3},
    {"type": "linear", "name": "b", "inputs": ["input"], "out_features": 3},
    {"type": "add", "name": "sum", "inputs": ["a", "b"]}], "output": "sum"})", {4}, 3)
                   ->logits_may_hold_their_gradient());
}

TEST(ModelGraph, WiringErrorsNameTheLayer) {
  auto parse_error = [](const std::string& layers, const std::string& extra = "") {
    return error_of([&] { ModelDescription::parse(R"({"layers": [)" + layers + "]" + extra + "}", "m.json"); });
  };
  const std::string unknown = parse_error(R"({"type": "linear", "name": "a", "out_features": 2},
      {"type": "add", "name": "s", "inputs": ["a", "nope"]})");
  EXPECT_NE(unknown.find("'s'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("'nope', which is no layer"), std::string::npos) << unknown;
  const std::string forward = parse_error(R"({"type": "linear", "name": "a", "inputs": ["b"], "out_features": 2},
      {"type": "linear", "name": "b", "out_features": 2})");
  EXPECT_NE(forward.find("not an earlier layer"), std::string::npos) << forward;
  const std::string cycle = parse_error(R"({"type": "relu", "name": "a", "inputs": ["a"]})");
  EXPECT_NE(cycle.find("no cycles"), std::string::npos) << cycle;
  const std::string unused = parse_error(R"({"type": "linear", "name": "a", "out_features": 2},
      {"type": "linear", "name": "b", "inputs": ["input"], "out_features": 2})");
  EXPECT_NE(unused.find("'a' is unused"), std::string::npos) << unused;
  const std::string output = parse_error(R"({"type": "linear", "name": "a", "out_features": 2})", R"(, "output": "z")");
  EXPECT_NE(output.find("\"output\" names 'z'"), std::string::npos) << output;
  const std::string reserved = parse_error(R"({"type": "relu", "name": "input"})");
  EXPECT_NE(reserved.find("stands for the model's input"), std::string::npos) << reserved;
  const std::string nested = parse_error(R"({"type": "residual", "name": "r", "body": [{"type": "relu", "inputs": ["input"]}]})");
  EXPECT_NE(nested.find("not for the layers inside a residual block"), std::string::npos) << nested;

  const std::string shapes = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [
      {"type": "linear", "name": "a", "out_features": 2},
      {"type": "linear", "name": "b", "inputs": ["input"], "out_features": 3},
      {"type": "add", "name": "s", "inputs": ["a", "b"]}]})", "m.json"), {4}, 2, Device{});
  });
  EXPECT_NE(shapes.find("layer 's' (add)"), std::string::npos) << shapes;
  EXPECT_NE(shapes.find("[2] (input 1) and [3] (input 2)"), std::string::npos) << shapes;
  const std::string single = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "linear", "name": "a", "out_features": 2},
      {"type": "concat", "name": "c"}]})", "m.json"), {4}, 2, Device{});
  });
  EXPECT_NE(single.find("layer 'c' (concat)"), std::string::npos) << single;
  EXPECT_NE(single.find("two or more inputs"), std::string::npos) << single;
  const std::string tied = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "linear", "name": "a", "out_features": 3},
      {"type": "linear", "name": "b", "out_features": 2, "tied_to": "a"}]})", "m.json"), {4}, 2, Device{});
  });
  EXPECT_NE(tied.find("layer 'b' (linear) is tied to 'a'"), std::string::npos) << tied;
  EXPECT_NE(tied.find("another shape"), std::string::npos) << tied;
}

}  // namespace
}  // namespace mirror::nn
