// test_model.cc — the model: the mlp built-in's names and their errors; the flat parameter/gradient layout; forward and
// backward of the whole MLP against a naive double-precision MLP (loss) and central finite differences of it
// (gradients); the grad-ready callback (once per parameter, reverse order, value final); gradient
// accumulation; deterministic initialisation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "mirror/error.h"
#include "counting_layer.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model.h"
#include "mirror/nn/model_build.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

TEST(MlpBuiltin, CanonicalNames) {
  EXPECT_EQ(canonical_mlp_name("mlp:512,256"), "mlp:512,256");
  EXPECT_EQ(canonical_mlp_name("mlp:7"), "mlp:7");
  EXPECT_EQ(canonical_mlp_name("keras-cnn"), "");
  EXPECT_EQ(build_graph("mlp:512,256", {784}, 10, Device{}).description, "mlp:512,256");
}

TEST(MlpBuiltin, BadStringsAreNamedInTheError) {
  for (const char* bad : {"mlp:", "mlp", "mlp:0", "mlp:a", "cnn:3", "mlp:512,", "mlp:,5", "mlp:5,,6", "mlp:-3",
                          "mlp: 5", "mlp:5x", "", "MLP:5", "mlp:99999999999999999999"}) {
    try {
      build_graph(bad, {8}, 10, Device{});
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      const std::string named = *bad ? "'" + std::string(bad) + "'" : "--model is empty";
      EXPECT_NE(e.message().find(named), std::string::npos) << e.what();
    }
  }
}

TEST(Model, FlatLayoutIsContiguousInLayerOrder) {
  auto owned = build_model("mlp:512,256", {784}, 10, Device{});
  Model& m = *owned;
  const auto& p = m.parameters();
  ASSERT_EQ(p.size(), 6u);
  const std::vector<std::string> names = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  const std::vector<Shape> shapes = {{512, 784}, {512}, {256, 512}, {256}, {10, 256}, {10}};
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].name, names[i]);
    EXPECT_EQ(p[i].shape, shapes[i]);
    EXPECT_EQ(p[i].offset, offset);
    EXPECT_EQ(p[i].numel, shape_numel(shapes[i]));
    offset += p[i].numel;
  }
  EXPECT_EQ(m.num_parameters(), 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10);  // 535818
  EXPECT_EQ(m.num_parameters(), offset);
  EXPECT_NE(m.params(), m.grads());
  EXPECT_EQ(m.num_layers(), 5u);
  EXPECT_EQ(m.layer_name(1), "relu1");
}

TEST(Model, BadConstructionArguments) {
  EXPECT_THROW(build_model("mlp:4", {0}, 10, Device{}), Error);
  EXPECT_THROW(build_model("mlp:4", {8}, 1, Device{}), Error);
  EXPECT_THROW(build_model("cnn:3", {8}, 10, Device{}), Error);
}

struct SmallSetup {
  std::int64_t batch = 5, in = 6, classes = 3;
  std::unique_ptr<Model> owned = build_model("mlp:5,4", {in}, classes, Device{});
  Model& model = *owned;
  std::vector<float> x = random_vector(batch * in, 31, -2.0f, 2.0f);
  std::vector<std::int32_t> y = {0, 2, 1, 2, 0};
  Tensor xt{{batch, in}, Device{}};
  SoftmaxCrossEntropy loss{Device{}};
  Tensor dlogits;
  SmallSetup() {
    model.params_from_host(random_vector(model.num_parameters(), 32));
    xt.copy_from_host(x);
  }
  LossStats step(GradMode mode = GradMode::kOverwrite, const GradReadyFn& ready = {}) {
    const Tensor& logits = model.forward(xt);
    const LossStats s = loss.forward_backward(logits, y, dlogits);
    model.backward(dlogits, mode, ready);
    return s;
  }
};

TEST(Model, ForwardAndBackwardMatchNaiveMlp) {
  SmallSetup s;
  const LossStats stats = s.step();
  const testing::NaiveMlp ref{{s.in, 5, 4, s.classes}};
  const auto host = s.model.params_to_host();
  std::vector<double> p(host.begin(), host.end());
  const std::vector<int> labels(s.y.begin(), s.y.end());
  EXPECT_NEAR(stats.mean_loss(), ref.loss(p, s.x, labels, s.batch), 1e-5);

  // Central differences of the double reference, h = 1e-6: truncation ~h² and rounding ~1e-16/h, both far
  // below float's gradient rounding (~1e-7 relative); ReLU kinks within h of a pre-activation are
  // vanishingly unlikely with these random values.
  const auto g = s.model.grads_to_host();
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double saved = p[i], h = 1e-6;
    p[i] = saved + h;
    const double up = ref.loss(p, s.x, labels, s.batch);
    p[i] = saved - h;
    const double down = ref.loss(p, s.x, labels, s.batch);
    p[i] = saved;
    const double want = (up - down) / (2 * h);
    ASSERT_NEAR(g[i], want, 1e-5 + 1e-4 * std::abs(want)) << "parameter " << i;
  }
}

TEST(Model, GradReadyFiresOncePerParamInReverseOrderWhenFinal) {
  SmallSetup s;
  std::vector<std::size_t> order;
  std::map<std::size_t, std::vector<float>> snapshot;
  s.step(GradMode::kOverwrite, [&](std::size_t index) {
    order.push_back(index);
    const ParamInfo& info = s.model.parameters()[index];
    const float* g = s.model.grads() + info.offset;  // CPU: readable right away
    snapshot[index].assign(g, g + info.numel);
  });
  const std::size_t n = s.model.parameters().size();
  ASSERT_EQ(order.size(), n);
  for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(order[k], n - 1 - k);
  const auto final_grads = s.model.grads_to_host();
  for (const auto& info_index : order) {
    const ParamInfo& info = s.model.parameters()[info_index];
    const std::vector<float> now(final_grads.begin() + info.offset, final_grads.begin() + info.offset + info.numel);
    EXPECT_EQ(snapshot[info_index], now) << info.name << " changed after it was reported ready";
  }
}

TEST(Model, AccumulationEqualsSumOfSeparateBackwards) {
  SmallSetup a;
  a.step();
  const auto g1 = a.model.grads_to_host();
  SmallSetup b;
  b.x = random_vector(b.batch * b.in, 33, -2.0f, 2.0f);
  b.xt.copy_from_host(b.x);
  b.step();
  const auto g2 = b.model.grads_to_host();

  SmallSetup c;  // same params as a and b; batch a then batch b, accumulating
  c.step(GradMode::kOverwrite);
  c.xt.copy_from_host(b.x);
  c.step(GradMode::kAccumulate);
  const auto sum = c.model.grads_to_host();
  for (std::size_t i = 0; i < sum.size(); ++i) ASSERT_NEAR(sum[i], g1[i] + g2[i], 1e-6 * (1 + std::abs(g1[i]) + std::abs(g2[i])));

  c.model.zero_grad();
  for (float v : c.model.grads_to_host()) ASSERT_EQ(v, 0.0f);
  c.xt.copy_from_host(a.x);
  c.step(GradMode::kAccumulate);  // accumulating into zeros = overwriting
  EXPECT_EQ(c.model.grads_to_host(), g1);
}

TEST(Model, InitIsDeterministicAndBounded) {
  auto a = build_model("mlp:32,16", {20}, 5, Device{}), b = build_model("mlp:32,16", {20}, 5, Device{}),
       c = build_model("mlp:32,16", {20}, 5, Device{});
  a->init_parameters(42);
  b->init_parameters(42);
  c->init_parameters(43);
  const auto pa = a->params_to_host(), pb = b->params_to_host(), pc = c->params_to_host();
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
  for (const ParamInfo& info : a->parameters()) {
    const bool weight = info.name.ends_with(".weight");
    const double fan_in = static_cast<double>(info.shape.back());
    const double bound = std::sqrt(6.0 / fan_in);
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < info.numel; ++i) {
      const float v = pa[info.offset + i];
      if (weight) {
        ASSERT_LE(std::abs(v), bound) << info.name;
      } else {
        ASSERT_EQ(v, 0.0f) << info.name;
      }
      sum += v;
      sq += static_cast<double>(v) * v;
    }
    if (weight) {  // U(-b, b): mean 0, variance b²/3; loose statistical checks (hundreds of samples)
      EXPECT_NEAR(sum / info.numel, 0.0, 0.25 * bound) << info.name;
      EXPECT_NEAR(sq / info.numel, bound * bound / 3, 0.3 * bound * bound / 3) << info.name;
    }
  }
}

TEST(Model, ForwardReusesBuffersAndChecksInput) {
  SmallSetup s;
  const float* first = s.model.forward(s.xt).data();
  s.step();
  EXPECT_EQ(s.model.forward(s.xt).data(), first);
  Tensor smaller({2, s.in}, Device{});
  smaller.copy_from_host(std::vector<float>(2 * s.in, 0.5f));
  EXPECT_EQ(s.model.forward(smaller).shape(), (Shape{2, s.classes}));
  EXPECT_EQ(s.model.forward(smaller).data(), first);  // shrinking never reallocates
  Tensor wrong({2, s.in + 1}, Device{});
  EXPECT_THROW(s.model.forward(wrong), Error);
  std::vector<float> too_few(3);
  EXPECT_THROW(s.model.params_from_host(too_few), Error);
}

}  // namespace
}  // namespace mirror::nn

namespace mirror::nn {
namespace {

// A chain counting -> linear -> counting built from given layers (the constructor the layer registry uses).
struct BufferedModel {
  testing::CountingLayer* first = nullptr;
  std::unique_ptr<Model> model;
  BufferedModel() {
    std::vector<NamedLayer> layers;
    auto counter = std::make_unique<testing::CountingLayer>();
    first = counter.get();
    layers.push_back({"count1", std::move(counter)});
    layers.push_back({"fc1", std::make_unique<Linear>(6, 3, Device{})});
    layers.push_back({"count2", std::make_unique<testing::CountingLayer>()});
    model = std::make_unique<Model>(std::move(layers), Shape{2, 3}, 3, Device{}, "counting test model");
  }
};

TEST(ModelBuffers, LaidOutInLayerOrderWithInitialValues) {
  BufferedModel b;
  const auto& infos = b.model->buffers();
  ASSERT_EQ(infos.size(), 4u);
  const char* names[] = {"count1.forwards", "count1.ids", "count2.forwards", "count2.ids"};
  const std::int64_t offsets[] = {0, 1, 3, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(infos[i].name, names[i]);
    EXPECT_EQ(infos[i].offset, offsets[i]);
  }
  EXPECT_EQ(b.model->num_buffer_values(), 6);
  EXPECT_EQ(b.model->buffers_to_host(), (std::vector<float>{0, -1, -1, 0, -1, -1}));
  EXPECT_EQ(b.model->num_parameters(), 6 * 3 + 3);  // buffers are not parameters
  EXPECT_EQ(b.model->description(), "counting test model");
  EXPECT_EQ(b.model->input_sample_shape(), (Shape{1, 2, 3}));  // [H, W] is one channel
  EXPECT_EQ(b.model->layer_output_shape(0), (Shape{1, 2, 3}));
  EXPECT_EQ(b.model->layer_output_shape(1), (Shape{3}));
}

TEST(ModelBuffers, ForwardHandsTheContextToEveryLayerAndTheBuffersRoundTrip) {
  BufferedModel b;
  b.model->init_parameters(1);
  Tensor x({2, 2, 3}, Device{});
  x.copy_from_host(std::vector<float>(12, 0.25f));
  const std::vector<std::int64_t> ids = {7, 40};
  ForwardContext context;
  context.seed = 99;
  context.step = 5;
  context.sample_ids = ids;
  b.model->forward(x, context);
  EXPECT_EQ(b.first->last_seed, 99u);
  b.model->forward(x);  // no context: no ids, step 0
  // forwards: 2; ids: -1 + 47 + 0, last step 0.
  EXPECT_EQ(b.model->buffers_to_host(), (std::vector<float>{2, 46, 0, 2, 46, 0}));
  EXPECT_EQ(b.first->last_seed, 0u);
  EXPECT_EQ(b.first->last_reducer, nullptr);
  const std::vector<float> saved = {3, 1.5f, -2, 8, 0.125f, 1e30f};
  b.model->buffers_from_host(saved);
  EXPECT_EQ(b.model->buffers_to_host(), saved);
  EXPECT_THROW(b.model->buffers_from_host(std::vector<float>(5)), Error);
  const std::vector<std::int64_t> wrong_count = {1, 2, 3};
  context.sample_ids = wrong_count;
  EXPECT_THROW(b.model->forward(x, context), Error);  // 3 ids for a batch of 2
}

TEST(ModelBuffers, SampleShapes) {
  EXPECT_EQ(model_sample_shape({784}), (Shape{784}));
  EXPECT_EQ(model_sample_shape({28, 28}), (Shape{1, 28, 28}));
  EXPECT_EQ(model_sample_shape({3, 32, 32}), (Shape{3, 32, 32}));
  EXPECT_THROW(model_sample_shape({}), Error);
  EXPECT_THROW(model_sample_shape({2, 0, 3}), Error);
  EXPECT_THROW(model_sample_shape({1, 2, 3, 4}), Error);
  auto owned = build_model("mlp:4", Shape{28, 28}, 10, Device{});
  Model& m = *owned;
  EXPECT_EQ(m.input_sample_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(m.input_features(), 784);
  EXPECT_EQ(m.num_buffer_values(), 0);
  EXPECT_TRUE(m.buffers_to_host().empty());
}

}  // namespace
}  // namespace mirror::nn
