// test_model_files.cc — model descriptions and the layers they brought: Flatten (a view), Dropout (masks a
// pure function of seed, step, sample id and element; inverted scaling; identity in evaluation; backward
// through the same mask), Residual (forward = body + shortcut computed by hand; gradients against central
// finite differences; gradients reported once each in decreasing order), JSON model files and built-ins
// (errors naming the layer and the shape that does not fit, typos, unknown and not-yet-built types), and
// the layer table; which parameters are exempt from weight decay (BatchNorm's, nested ones too, and biases).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "mirror/error.h"
#include "mirror/nn/dropout.h"
#include "mirror/nn/flatten.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/weight_decay.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

TEST(Flatten, IsAViewInCHWOrderAndGivesBackTheShape) {
  Flatten f;
  EXPECT_EQ(f.output_sample_shape({3, 4, 5}), (Shape{60}));
  Tensor x({2, 3, 4, 5}, Device{});
  x.copy_from_host(random_vector(120, 1));
  const Tensor& y = f.forward(x);
  EXPECT_EQ(y.shape(), (Shape{2, 60}));
  EXPECT_EQ(y.data(), x.data());
  const Tensor* dx = f.backward(y, GradMode::kOverwrite, true, {});
  EXPECT_EQ(dx->shape(), (Shape{2, 3, 4, 5}));
  EXPECT_EQ(dx->data(), y.data());
}

TEST(Dropout, MaskIsKeyedBySampleNotByPositionOrBatch) {
  const float p = 0.3f;
  Dropout d(p, Device{});
  const std::int64_t per = 50;
  Tensor x({4, per}, Device{});
  x.copy_from_host(std::vector<float>(4 * per, 1.0f));
  const std::vector<std::int64_t> ids = {10, 11, 12, 13};
  ForwardContext ctx;
  ctx.seed = 7;
  ctx.step = 3;
  ctx.sample_ids = ids;
  d.set_forward_context(&ctx);
  const std::vector<float> whole = d.forward(x).to_host();
  // Every value is 0 or 1/(1-p), and exactly what the keyed draw says.
  std::int64_t dropped = 0;
  for (std::int64_t r = 0; r < 4; ++r)
    for (std::int64_t e = 0; e < per; ++e) {
      const float want = dropout_uniform(7, 3, ids[r], e) >= p ? 1.0f / (1.0f - p) : 0.0f;
      EXPECT_EQ(whole[r * per + e], want);
      dropped += whole[r * per + e] == 0.0f;
    }
  EXPECT_GT(dropped, 20);  // about 60 of 200
  EXPECT_LT(dropped, 100);
  // The same samples split over two "ranks" (batches of 2, in another order) get the same rows.
  Tensor half({2, per}, Device{});
  half.copy_from_host(std::vector<float>(2 * per, 1.0f));
  const std::vector<std::int64_t> other = {13, 11};
  ctx.sample_ids = other;
  const std::vector<float> part = d.forward(half).to_host();
  for (std::int64_t e = 0; e < per; ++e) {
    EXPECT_EQ(part[e], whole[3 * per + e]);
    EXPECT_EQ(part[per + e], whole[1 * per + e]);
  }
  // Another step or seed gives another mask.
  ctx.sample_ids = ids;
  ctx.step = 4;
  EXPECT_NE(d.forward(x).to_host(), whole);
}

TEST(Dropout, BackwardUsesTheMaskAndEvaluationIsTheIdentity) {
  Dropout d(0.5f, Device{});
  Tensor x({3, 8}, Device{});
  const std::vector<float> xv = random_vector(24, 2);
  x.copy_from_host(xv);
  const std::vector<float> y = d.forward(x).to_host();  // no context: row index as id, seed 0, step 0
  Tensor dy({3, 8}, Device{});
  const std::vector<float> g = random_vector(24, 3);
  dy.copy_from_host(g);
  const std::vector<float> dx = d.backward(dy, GradMode::kOverwrite, true, {})->to_host();
  for (std::size_t i = 0; i < 24; ++i) {
    const float m = dropout_uniform(0, 0, static_cast<std::int64_t>(i / 8), static_cast<std::int64_t>(i % 8)) >= 0.5f ? 2.0f : 0.0f;
    EXPECT_EQ(y[i], xv[i] * m);
    EXPECT_EQ(dx[i], g[i] * m);
  }
  d.set_training(false);
  EXPECT_EQ(d.forward(x).to_host(), xv);
  EXPECT_EQ(d.backward(dy, GradMode::kOverwrite, true, {})->to_host(), g);
  EXPECT_THROW(Dropout(1.0f, Device{}), Error);
}

constexpr const char* kResidualModel = R"({"layers": [
  {"type": "linear", "name": "fc1", "out_features": 6},
  {"type": "residual", "name": "block",
   "body": [{"type": "linear", "out_features": 6}, {"type": "relu"}, {"type": "linear", "out_features": 6}],
   "shortcut": [{"type": "linear", "name": "proj", "out_features": 6, "bias": false}]},
  {"type": "relu"},
  {"type": "linear", "name": "fc2", "out_features": "classes"}]})";

TEST(Residual, ForwardIsBodyPlusShortcut) {
  auto model = build_model(ModelDescription::parse(kResidualModel, "test"), {5}, 3, Device{});
  model->init_parameters(4);
  const auto& infos = model->parameters();
  std::vector<std::string> names;
  for (const ParamInfo& p : infos) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "block.body.linear1.weight",
                                             "block.body.linear1.bias", "block.body.linear2.weight",
                                             "block.body.linear2.bias", "block.shortcut.proj.weight", "fc2.weight",
                                             "fc2.bias"}));
  // By hand, in double: h = W1 x + b1; y = relu(B2 relu(B1 h + c1) + c2 + P h); z = W2 y + b2.
  const std::vector<float> p = model->params_to_host();
  auto param = [&](std::size_t i) { return std::vector<float>(p.begin() + infos[i].offset, p.begin() + infos[i].offset + infos[i].numel); };
  auto affine = [](const std::vector<float>& w, const std::vector<float>* b, const std::vector<double>& v, int out) {
    std::vector<double> r(out, 0.0);
    const int in = static_cast<int>(v.size());
    for (int o = 0; o < out; ++o) {
      r[o] = b ? (*b)[o] : 0.0;
      for (int i = 0; i < in; ++i) r[o] += static_cast<double>(w[o * in + i]) * v[i];
    }
    return r;
  };
  auto relu = [](std::vector<double> v) { for (double& a : v) a = std::max(a, 0.0); return v; };
  const std::vector<float> xv = random_vector(2 * 5, 9);
  Tensor x({2, 5}, Device{});
  x.copy_from_host(xv);
  const std::vector<float> z = model->forward(x).to_host();
  for (int r = 0; r < 2; ++r) {
    const std::vector<double> v(xv.begin() + r * 5, xv.begin() + r * 5 + 5);
    const auto w1 = param(0), b1 = param(1), c1w = param(2), c1b = param(3), c2w = param(4), c2b = param(5), pw = param(6),
               w2 = param(7), b2 = param(8);
    const auto h = affine(w1, &b1, v, 6);
    const auto body = affine(c2w, &c2b, relu(affine(c1w, &c1b, h, 6)), 6);
    const auto shortcut = affine(pw, nullptr, h, 6);
    std::vector<double> y(6);
    for (int i = 0; i < 6; ++i) y[i] = std::max(body[i] + shortcut[i], 0.0);
    const auto logits = affine(w2, &b2, y, 3);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(z[r * 3 + c], logits[c], 1e-5) << r << "," << c;
  }
}

TEST(Residual, GradientsMatchFiniteDifferencesAndComeInDecreasingOrder) {
  for (const bool identity : {false, true}) {
    std::string text = kResidualModel;
    if (identity) text.replace(text.find("[{\"type\": \"linear\", \"name\": \"proj\""), std::string(R"([{"type": "linear", "name": "proj", "out_features": 6, "bias": false}])").size(), "[]");
    auto model = build_model(ModelDescription::parse(text, "test"), {5}, 3, Device{});
    model->init_parameters(5);
    Tensor x({3, 5}, Device{});
    x.copy_from_host(random_vector(15, 6));
    const std::vector<std::int32_t> labels = {0, 2, 1};
    SoftmaxCrossEntropy loss(Device{});
    Tensor dlogits;
    loss.forward_backward(model->forward(x), labels, dlogits);
    std::vector<std::size_t> order;
    model->backward(dlogits, GradMode::kOverwrite, [&](std::size_t i) { order.push_back(i); });
    ASSERT_EQ(order.size(), model->parameters().size());
    for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], order.size() - 1 - k) << "identity " << identity;
    const std::vector<float> grads = model->grads_to_host();
    std::vector<float> params = model->params_to_host();
    const double h = 1e-3;
    for (std::size_t i = 0; i < params.size(); i += 7) {  // every 7th parameter
      const float saved = params[i];
      auto mean_loss = [&](float v) {
        params[i] = v;
        model->params_from_host(params);
        return loss.forward(model->forward(x), labels).mean_loss();
      };
      const double numeric = (mean_loss(saved + h) - mean_loss(saved - h)) / (2 * h);
      params[i] = saved;
      model->params_from_host(params);
      EXPECT_NEAR(grads[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << "parameter " << i << " identity " << identity;
    }
  }
}

TEST(ModelFiles, ErrorsNameTheLayerAndTheShape) {
  const std::string misfit = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "residual", "name": "b",
      "body": [{"type": "linear", "out_features": 4}]}, {"type": "linear", "out_features": "classes"}]})", "m.json"),
                {5}, 3, Device{});
  });
  EXPECT_NE(misfit.find("residual block 'b'"), std::string::npos) << misfit;
  EXPECT_NE(misfit.find("[4]"), std::string::npos) << misfit;
  EXPECT_NE(misfit.find("[5]"), std::string::npos) << misfit;

  const std::string typo = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "linear", "name": "fc", "out_featurs": 4}]})", "m.json"),
                {5}, 3, Device{});
  });
  EXPECT_NE(typo.find("layer 'fc' (linear)"), std::string::npos) << typo;
  EXPECT_NE(typo.find("out_features"), std::string::npos) << typo;  // "is required" (the typo'd key unused)

  const std::string unknown_key = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "linear", "out_features": "classes", "bais": true}]})",
                                        "m.json"), {5}, 3, Device{});
  });
  EXPECT_NE(unknown_key.find("unknown setting \"bais\""), std::string::npos) << unknown_key;

  const std::string type = error_of([] { ModelDescription::parse(R"({"layers": [{"type": "lstm"}]})", "m.json"); });
  EXPECT_NE(type.find("m.json: layers[0]: unknown layer type \"lstm\""), std::string::npos) << type;

  if (find_layer_type("conv2d")->factory == nullptr) {  // a type of the vocabulary not in this build yet
    const std::string later = error_of([] { build_model("keras-cnn", {28, 28}, 10, Device{}); });
    EXPECT_NE(later.find("layer 'conv1' (conv2d)"), std::string::npos) << later;
    EXPECT_NE(later.find("does not have it yet"), std::string::npos) << later;
  }

  const std::string ends = error_of([] {
    build_model(ModelDescription::parse(R"({"layers": [{"type": "linear", "out_features": 7}]})", "m.json"), {5}, 3,
                Device{});
  });
  EXPECT_NE(ends.find("[7]"), std::string::npos) << ends;

  EXPECT_NE(error_of([] { ModelDescription::parse("{\"layers\": [", "m.json"); }).find("m.json is not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] { ModelDescription::parse(R"({"layers": [{"type": "relu", "name": "a"}, {"type": "relu", "name": "a"}]})", "m.json"); })
                .find("'a' is already used"),
            std::string::npos);
  EXPECT_NE(error_of([] { ModelDescription::parse(R"({"layers": [{"type": "relu", "body": []}]})", "m.json"); })
                .find("only a residual layer"),
            std::string::npos);
  EXPECT_NE(error_of([] { resolve_model_description("cnn:3"); }).find("neither a file nor a built-in"), std::string::npos);
}

TEST(ModelFiles, BuiltinsRoundTripAndMlpMatchesItsSpec) {
  for (const char* name : {"keras-cnn", "cnn-bn", "resnet20", "mlp:16,8"}) {
    const ModelDescription d = builtin_model(name);
    EXPECT_EQ(ModelDescription::parse(d.to_json(), "again").to_json(), d.to_json()) << name;
  }
  EXPECT_EQ(builtin_model("resnet20").layers.size(), 3u + 9u * 2u + 3u);  // stem, 9 blocks + ReLUs, pool/flatten/fc
  // The description of mlp:16,8 builds the same layout and outputs as the spec.
  auto from_json = build_model(builtin_model("mlp:16,8"), {5}, 3, Device{});
  auto from_spec = build_model("mlp:16,8", {5}, 3, Device{});
  ASSERT_EQ(from_json->parameters().size(), from_spec->parameters().size());
  for (std::size_t i = 0; i < from_spec->parameters().size(); ++i) {
    EXPECT_EQ(from_json->parameters()[i].name, from_spec->parameters()[i].name);
    EXPECT_EQ(from_json->parameters()[i].shape, from_spec->parameters()[i].shape);
  }
  from_spec->init_parameters(3);
  from_json->params_from_host(from_spec->params_to_host());
  Tensor x({2, 5}, Device{});
  x.copy_from_host(random_vector(10, 4));
  EXPECT_EQ(from_json->forward(x).to_host(), from_spec->forward(x).to_host());
  const std::string table = layer_table(*from_json);
  EXPECT_NE(table.find("fc1 (linear)"), std::string::npos) << table;
  EXPECT_NE(table.find("total: " + std::to_string(from_json->num_parameters()) + " parameters"), std::string::npos) << table;
}

// BatchNorm's weight and bias (also inside a residual block) and every bias are exempt from weight decay;
// convolution and linear weights are not. Ranges are the exempt parameters' offsets, neighbours merged.
TEST(WeightDecay, BatchNormAndBiasesAreExempt) {
  auto model = build_model(ModelDescription::parse(R"({"layers": [
    {"type": "conv2d", "name": "c", "out_channels": 3, "kernel": 3, "padding": 1, "bias": true},
    {"type": "batchnorm2d", "name": "bn"}, {"type": "relu"},
    {"type": "residual", "name": "blk", "body": [
      {"type": "conv2d", "name": "conv", "out_channels": 3, "kernel": 3, "padding": 1, "bias": false},
      {"type": "batchnorm2d", "name": "bn"}], "shortcut": []},
    {"type": "flatten"}, {"type": "linear", "name": "fc", "out_features": "classes"}]})", "test"),
                           {1, 4, 4}, 3, Device{});
  const std::set<std::string> expected = {"c.bias", "bn.weight", "bn.bias", "blk.body.bn.weight", "blk.body.bn.bias",
                                          "fc.bias"};
  std::set<std::string> exempt, names;
  std::vector<bool> element_exempt(static_cast<std::size_t>(model->num_parameters()), false);
  for (const ParamInfo& p : model->parameters()) {
    names.insert(p.name);
    if (decay_exempt(p)) exempt.insert(p.name);
    if (expected.count(p.name))
      for (std::int64_t i = p.offset; i < p.offset + p.numel; ++i) element_exempt[static_cast<std::size_t>(i)] = true;
  }
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(exempt, expected);
  std::vector<bool> covered(element_exempt.size(), false);
  std::int64_t last_end = -1;
  for (const Optimizer::Range& r : decay_exempt_ranges(model->parameters())) {
    EXPECT_GT(r.begin, last_end) << "ranges are sorted, disjoint and merged";
    last_end = r.end;
    for (std::int64_t i = r.begin; i < r.end; ++i) covered[static_cast<std::size_t>(i)] = true;
  }
  EXPECT_EQ(covered, element_exempt);
  // c.bias, bn.weight, bn.bias are neighbours: one range (conv weight 27, then 3 + 3 + 3).
  EXPECT_EQ(decay_exempt_ranges(model->parameters()).front().begin, 27);
  EXPECT_EQ(decay_exempt_ranges(model->parameters()).front().end, 36);
}

}  // namespace
}  // namespace mirror::nn

namespace mirror::nn {
namespace {

// The layer table shows a residual block's own layers under its row, indented, each with the output shape and
// parameter count worked out by hand here (conv: out x in x k x k (+ out for a bias); BatchNorm: 2 x channels).
TEST(LayerTable, ResidualBlockRowsShowItsLayers) {
  auto model = build_model(ModelDescription::parse(R"({"layers": [
    {"type": "conv2d", "name": "c", "out_channels": 4, "kernel": 3, "padding": 1, "bias": true},
    {"type": "residual", "name": "blk", "body": [
      {"type": "conv2d", "name": "conv", "out_channels": 8, "kernel": 3, "stride": 2, "padding": 1, "bias": false},
      {"type": "batchnorm2d", "name": "bn"}],
     "shortcut": [{"type": "conv2d", "name": "proj", "out_channels": 8, "kernel": 1, "stride": 2, "bias": false}]},
    {"type": "flatten"}, {"type": "linear", "name": "fc", "out_features": "classes"}]})", "test"),
                           {2, 6, 6}, 3, Device{});
  const std::string table = layer_table(*model);
  std::vector<std::string> lines;
  for (std::size_t at = 0, end; at < table.size(); at = end + 1) {
    end = table.find('\n', at);
    lines.push_back(table.substr(at, end - at));
  }
  // index of the line that starts with `lead` (after the table's two-space margin), or -1
  auto find = [&](const std::string& lead) {
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (lines[i].rfind("  " + lead, 0) == 0) return static_cast<int>(i);
    return -1;
  };
  const int block = find("blk (residual)"), conv = find("  body.conv (conv2d)"), bn = find("  body.bn (batchnorm2d)"),
            proj = find("  shortcut.proj (conv2d)"), fc = find("fc (linear)");
  ASSERT_GE(block, 0) << table;
  EXPECT_EQ(conv, block + 1) << table;
  EXPECT_EQ(bn, block + 2) << table;
  EXPECT_EQ(proj, block + 3) << table;
  EXPECT_GT(fc, proj) << table;
  auto ends_with = [](const std::string& line, const std::string& tail) {
    return line.size() >= tail.size() && line.compare(line.size() - tail.size(), tail.size(), tail) == 0;
  };
  EXPECT_NE(lines[block].find("[8, 3, 3]"), std::string::npos) << lines[block];
  EXPECT_TRUE(ends_with(lines[block], " " + std::to_string(288 + 16 + 32))) << lines[block];
  EXPECT_NE(lines[conv].find("[8, 3, 3]"), std::string::npos) << lines[conv];
  EXPECT_TRUE(ends_with(lines[conv], " 288")) << lines[conv];
  EXPECT_TRUE(ends_with(lines[bn], " 16")) << lines[bn];
  EXPECT_NE(lines[proj].find("[8, 3, 3]"), std::string::npos) << lines[proj];
  EXPECT_TRUE(ends_with(lines[proj], " 32")) << lines[proj];
  // Each parameter counted once in the total: conv 4*2*9+4, the block 336, fc 72*3+3.
  EXPECT_NE(table.find("total: " + std::to_string(76 + 336 + 72 * 3 + 3) + " parameters"), std::string::npos) << table;
}

}  // namespace
}  // namespace mirror::nn
