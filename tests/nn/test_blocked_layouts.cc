// test_blocked_layouts.cc — channel-blocked tensors between CPU layers (tensor.h's Layout, layer.h): a small
// ResNet (conv stem, BN, ReLU, an identity and a projection residual block, global average pooling, Linear)
// whose layers hand blocked tensors on computes what the same layers compute when every tensor between them is
// NCHW (each layer wrapped so that it takes no blocked input: the path test_nn_conv_layers, test_nn_batch_norm
// and test_nn_layers check against plain loops): logits, every gradient and the running statistics, in training
// and in evaluation; a probe checks that blocked tensors really flowed. A ReLU before a max pooling, absorbed by
// it (chain_fusion.h), gives bit for bit what the two layers give apart; so does a ReLU after a BatchNorm2d or
// a residual block, absorbed by it. A cnn-bn-like chain whose pooling layers take the blocked tensors (and give
// them on to a convolution, or NCHW to flatten) computes bit for bit what it computes with NCHW pooling.
// Also Tensor::set_layout's checks.
#include <gtest/gtest.h>

#include "forwarding_layer.h"
#include "layer_checks.h"
#include "mirror/error.h"
#include "mirror/nn/activation.h"
#include "mirror/nn/avg_pool2d.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/conv2d.h"
#include "mirror/nn/global_avg_pool2d.h"
#include "mirror/nn/flatten.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/max_pool2d.h"
#include "mirror/nn/model.h"
#include "mirror/nn/residual.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::host_tensor;
using testing::random_vector;

// Forwards everything to `inner` but takes no blocked tensors, so a model keeps NCHW around it.
class NchwOnly final : public testing::ForwardingLayer {
 public:
  explicit NchwOnly(std::unique_ptr<Layer> inner) : ForwardingLayer(std::move(inner)) { accepts_blocked_ = false; }
  const Tensor& forward(const Tensor& x) override {
    EXPECT_FALSE(x.blocked()) << kind();
    blocked_output_ = false;  // the inner layer gives NCHW too
    return ForwardingLayer::forward(x);
  }
};

// The identity, taking any layout; records the layout it was given.
class LayoutProbe final : public Layer {
 public:
  LayoutProbe() { accepts_blocked_ = true; }
  std::string kind() const override { return "probe"; }
  Shape output_sample_shape(const Shape& s) const override { return s; }
  const Tensor& forward(const Tensor& x) override {
    seen = x.layout();
    return x;
  }
  const Tensor* backward(const Tensor& dy, GradMode, bool, const LayerGradReady&) override { return &dy; }
  Layout seen = Layout::kNchw;
};

struct Built {
  std::unique_ptr<Model> model;
  LayoutProbe* probe = nullptr;
};

// Input [3, 10, 10] → 10 classes. nchw: every layer (inside the blocks too) wrapped in NchwOnly.
Built small_resnet(bool nchw) {
  const Device cpu{};
  auto wrap = [nchw](std::unique_ptr<Layer> l) -> std::unique_ptr<Layer> {
    return nchw ? std::make_unique<NchwOnly>(std::move(l)) : std::move(l);
  };
  auto conv = [&](std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride) {
    return wrap(std::make_unique<Conv2d>(in, out, k, k, stride, stride, k / 2, k / 2, false, cpu));
  };
  auto bn = [&](std::int64_t c) { return wrap(std::make_unique<BatchNorm2d>(c, cpu)); };
  auto relu = [&] { return wrap(std::make_unique<ReLU>(cpu)); };
  auto block = [&](std::int64_t in, std::int64_t out, std::int64_t stride, Shape input) {
    std::vector<NamedLayer> body, shortcut;
    body.push_back({"conv1", conv(in, out, 3, stride)});
    body.push_back({"bn1", bn(out)});
    body.push_back({"relu1", relu()});
    body.push_back({"conv2", conv(out, out, 3, 1)});
    body.push_back({"bn2", bn(out)});
    if (stride != 1 || in != out) {
      shortcut.push_back({"conv", conv(in, out, 1, stride)});
      shortcut.push_back({"bn", bn(out)});
    }
    return wrap(std::make_unique<Residual>(std::move(body), std::move(shortcut), std::move(input), cpu));
  };
  Built b;
  std::vector<NamedLayer> layers;
  layers.push_back({"conv1", conv(3, 16, 3, 1)});
  layers.push_back({"bn1", bn(16)});
  layers.push_back({"relu1", relu()});
  layers.push_back({"block1", block(16, 16, 1, {16, 10, 10})});
  layers.push_back({"relu2", relu()});
  auto probe = std::make_unique<LayoutProbe>();
  b.probe = probe.get();
  layers.push_back({"probe", std::move(probe)});
  layers.push_back({"block2", block(16, 32, 2, {16, 10, 10})});
  layers.push_back({"relu3", relu()});
  layers.push_back({"pool", wrap(std::make_unique<GlobalAvgPool2d>(cpu))});
  layers.push_back({"fc", wrap(std::make_unique<Linear>(32, 10, cpu))});
  b.model = std::make_unique<Model>(std::move(layers), Shape{3, 10, 10}, 10, cpu, "small resnet");
  b.model->init_parameters(7);
  return b;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

TEST(BlockedLayouts, AResNetWithBlockedTensorsComputesWhatTheNchwOneDoes) {
  Built fast = small_resnet(false), ref = small_resnet(true);
  const Shape shape{5, 3, 10, 10};
  const auto x = random_vector(5 * 300, 11);
  const Tensor xt = host_tensor(x, shape);
  const auto dlogits = random_vector(5 * 10, 12);
  const Tensor dl = host_tensor(dlogits, {5, 10});
  for (int step = 0; step < 2; ++step) {  // the second step reuses every primitive and buffer
    SCOPED_TRACE("step " + std::to_string(step));
    const auto y_fast = fast.model->forward(xt).to_host();
    const auto y_ref = ref.model->forward(xt).to_host();
    expect_near_all(y_fast, y_ref, 1e-5, "logits");
    fast.model->backward(dl);
    ref.model->backward(dl);
    expect_near_all(fast.model->grads_to_host(), ref.model->grads_to_host(), 1e-5, "gradients");
    expect_near_all(fast.model->buffers_to_host(), ref.model->buffers_to_host(), 1e-6, "running statistics");
  }
  EXPECT_NE(fast.probe->seen, Layout::kNchw) << "no blocked tensor reached the probe: nothing was tested";
  EXPECT_EQ(ref.probe->seen, Layout::kNchw);
  fast.model->set_training(false);
  ref.model->set_training(false);
  expect_near_all(fast.model->forward(xt).to_host(), ref.model->forward(xt).to_host(), 1e-5, "evaluation logits");
}

// conv 3→16, BN, ReLU, max pool 2×2 (BN's output blocked, so the pool gets it through a bridge), conv 16→8,
// ReLU, max pool 3×3 stride 2 padding 1, flatten, Linear. apart: every layer wrapped, so no ReLU is absorbed.
std::unique_ptr<Model> pooled_cnn(bool apart, std::vector<const ReLU*>& relus) {
  const Device cpu{};
  auto wrap = [apart](std::unique_ptr<Layer> l) -> std::unique_ptr<Layer> {
    return apart ? std::make_unique<NchwOnly>(std::move(l)) : std::move(l);
  };
  auto relu = [&] {
    auto r = std::make_unique<ReLU>(cpu);
    relus.push_back(r.get());
    return wrap(std::move(r));
  };
  std::vector<NamedLayer> layers;
  layers.push_back({"conv1", wrap(std::make_unique<Conv2d>(3, 16, 3, 3, 1, 1, 1, 1, true, cpu))});
  layers.push_back({"bn1", wrap(std::make_unique<BatchNorm2d>(16, cpu))});
  layers.push_back({"relu1", relu()});
  layers.push_back({"pool1", wrap(std::make_unique<MaxPool2d>(2, 2, 2, 2, 0, 0, cpu))});
  layers.push_back({"conv2", wrap(std::make_unique<Conv2d>(16, 8, 3, 3, 1, 1, 1, 1, true, cpu))});
  layers.push_back({"relu2", relu()});
  layers.push_back({"pool2", wrap(std::make_unique<MaxPool2d>(3, 3, 2, 2, 1, 1, cpu))});
  layers.push_back({"flatten", wrap(std::make_unique<Flatten>())});
  layers.push_back({"fc", wrap(std::make_unique<Linear>(8 * 3 * 3, 10, cpu))});
  auto m = std::make_unique<Model>(std::move(layers), Shape{3, 10, 10}, 10, cpu, "pooled cnn");
  m->init_parameters(5);
  return m;
}

TEST(ReluAbsorption, AReluBeforeMaxPoolingIsAbsorbedBitForBit) {
  std::vector<const ReLU*> fast_relus, apart_relus;
  auto fast = pooled_cnn(false, fast_relus), apart = pooled_cnn(true, apart_relus);
  // The fusion pass took every ReLU into a layer before or after it; apart, every ReLU is a layer of its own.
  EXPECT_EQ(layer_table(*fast).find(" (relu) "), std::string::npos) << layer_table(*fast);
  EXPECT_NE(layer_table(*apart).find(" (relu) "), std::string::npos) << layer_table(*apart);
  const Tensor xt = host_tensor(random_vector(4 * 300, 21), {4, 3, 10, 10});
  const Tensor dl = host_tensor(random_vector(4 * 10, 22), {4, 10});
  for (int step = 0; step < 2; ++step) {
    EXPECT_EQ(fast->forward(xt).to_host(), apart->forward(xt).to_host()) << "logits, step " << step;
    fast->backward(dl);
    apart->backward(dl);
    EXPECT_EQ(fast->grads_to_host(), apart->grads_to_host()) << "gradients, step " << step;
  }
}

// Forwards everything to a pooling layer and records the layout of its input (not a Pool2d itself, so the fusion
// pass leaves the ReLU before it apart); nchw: takes no blocked tensors, so the model hands the pooling NCHW
// through a bridge.
class PoolSpy final : public Layer {
 public:
  PoolSpy(std::unique_ptr<Layer> inner, bool nchw) : inner_(std::move(inner)), nchw_(nchw) {
    accepts_blocked_ = !nchw_ && inner_->accepts_blocked();
  }
  std::string kind() const override { return inner_->kind(); }
  Shape output_sample_shape(const Shape& s) const override { return inner_->output_sample_shape(s); }
  const Tensor& forward(const Tensor& x) override {
    seen = x.layout();
    inner_->set_blocked_output(blocked_output_);
    inner_->set_training(training());
    return inner_->forward(x);
  }
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& ready) override {
    return inner_->backward(dy, mode, need_dx, ready);
  }
  Layout seen = Layout::kNchw;

 private:
  std::unique_ptr<Layer> inner_;
  bool nchw_;
};

// cnn-bn's pattern, three times: conv 1→8 (NCHW out: one input channel), BN, ReLU, max pool 2×2 (NCHW in);
// conv 8→16 (blocked), BN, ReLU, max pool 2×2 on 7×7 (blocked in, blocked out to the next conv; the last row and
// column are in no window); conv 16→16, BN, ReLU, average pool 3×3 stride 2 padding 1 (blocked in, NCHW out to
// flatten); Linear. nchw: the pooling layers take NCHW tensors (the bridges reorder around them).
std::unique_ptr<Model> cnn_bn_like(bool nchw, std::vector<PoolSpy*>& spies) {
  const Device cpu{};
  auto pool = [&](std::unique_ptr<Layer> p) {
    auto s = std::make_unique<PoolSpy>(std::move(p), nchw);
    spies.push_back(s.get());
    return s;
  };
  auto conv = [&](std::int64_t in, std::int64_t out) {
    return std::make_unique<Conv2d>(in, out, 3, 3, 1, 1, 1, 1, false, cpu);
  };
  std::vector<NamedLayer> layers;
  layers.push_back({"conv1", conv(1, 8)});
  layers.push_back({"bn1", std::make_unique<BatchNorm2d>(8, cpu)});
  layers.push_back({"relu1", std::make_unique<ReLU>(cpu)});
  layers.push_back({"pool1", pool(std::make_unique<MaxPool2d>(2, 2, 2, 2, 0, 0, cpu))});
  layers.push_back({"conv2", conv(8, 16)});
  layers.push_back({"bn2", std::make_unique<BatchNorm2d>(16, cpu)});
  layers.push_back({"relu2", std::make_unique<ReLU>(cpu)});
  layers.push_back({"pool2", pool(std::make_unique<MaxPool2d>(2, 2, 2, 2, 0, 0, cpu))});
  layers.push_back({"conv3", conv(16, 16)});
  layers.push_back({"bn3", std::make_unique<BatchNorm2d>(16, cpu)});
  layers.push_back({"relu3", std::make_unique<ReLU>(cpu)});
  layers.push_back({"pool3", pool(std::make_unique<AvgPool2d>(3, 3, 2, 2, 1, 1, cpu))});
  layers.push_back({"flatten", std::make_unique<Flatten>()});
  layers.push_back({"fc", std::make_unique<Linear>(16 * 2 * 2, 10, cpu)});
  auto m = std::make_unique<Model>(std::move(layers), Shape{1, 14, 14}, 10, cpu, "cnn-bn-like");
  m->init_parameters(13);
  return m;
}

TEST(BlockedLayouts, PoolingOnBlockedTensorsComputesWhatNchwPoolingDoesBitForBit) {
  std::vector<PoolSpy*> fast_spies, ref_spies;
  auto fast = cnn_bn_like(false, fast_spies), ref = cnn_bn_like(true, ref_spies);
  const Tensor xt = host_tensor(random_vector(5 * 196, 41), {5, 1, 14, 14});
  const Tensor dl = host_tensor(random_vector(5 * 10, 42), {5, 10});
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    EXPECT_EQ(fast->forward(xt).to_host(), ref->forward(xt).to_host()) << "logits";
    fast->backward(dl);
    ref->backward(dl);
    EXPECT_EQ(fast->grads_to_host(), ref->grads_to_host()) << "gradients";
    EXPECT_EQ(fast->buffers_to_host(), ref->buffers_to_host()) << "running statistics";
  }
  EXPECT_EQ(fast_spies[0]->seen, Layout::kNchw);  // conv1 (one input channel) stays NCHW
  EXPECT_NE(fast_spies[1]->seen, Layout::kNchw) << "no blocked tensor reached pool2: nothing was tested";
  EXPECT_NE(fast_spies[2]->seen, Layout::kNchw) << "no blocked tensor reached pool3: nothing was tested";
  for (const PoolSpy* s : ref_spies) EXPECT_EQ(s->seen, Layout::kNchw);
  fast->set_training(false);
  ref->set_training(false);
  EXPECT_EQ(fast->forward(xt).to_host(), ref->forward(xt).to_host()) << "evaluation logits";
}

// Forwards everything to `inner` (layouts included) but is no ReLU to the chain, so no layer absorbs it.
class OpaqueRelu final : public Layer {
 public:
  explicit OpaqueRelu(std::unique_ptr<ReLU> inner) : inner_(std::move(inner)) {
    accepts_blocked_ = inner_->accepts_blocked();
  }
  std::string kind() const override { return "opaque relu"; }
  Shape output_sample_shape(const Shape& s) const override { return s; }
  const Tensor& forward(const Tensor& x) override { return inner_->forward(x); }
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& ready) override {
    return inner_->backward(dy, mode, need_dx, ready);
  }

 private:
  std::unique_ptr<ReLU> inner_;
};

// conv 3→16 (NCHW output), BN, ReLU, an identity block (conv, BN, ReLU, conv, BN) and ReLU, a projection block
// 16→32 stride 2 and ReLU, global average pooling, Linear: every ReLU follows a BN or a block (blocked tensors
// from the first block on). apart: every ReLU opaque, so none is absorbed and the layouts stay the same.
std::unique_ptr<Model> relu_after_bn_resnet(bool apart, std::vector<const ReLU*>& relus) {
  const Device cpu{};
  auto relu = [&]() -> std::unique_ptr<Layer> {
    auto r = std::make_unique<ReLU>(cpu);
    relus.push_back(r.get());
    if (apart) return std::make_unique<OpaqueRelu>(std::move(r));
    return r;
  };
  auto conv = [&](std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride) {
    return std::make_unique<Conv2d>(in, out, k, k, stride, stride, k / 2, k / 2, false, cpu);
  };
  auto block = [&](std::int64_t in, std::int64_t out, std::int64_t stride, Shape input) {
    std::vector<NamedLayer> body, shortcut;
    body.push_back({"conv1", conv(in, out, 3, stride)});
    body.push_back({"bn1", std::make_unique<BatchNorm2d>(out, cpu)});
    body.push_back({"relu1", relu()});
    body.push_back({"conv2", conv(out, out, 3, 1)});
    body.push_back({"bn2", std::make_unique<BatchNorm2d>(out, cpu)});
    if (stride != 1 || in != out) {
      shortcut.push_back({"conv", conv(in, out, 1, stride)});
      shortcut.push_back({"bn", std::make_unique<BatchNorm2d>(out, cpu)});
    }
    return std::make_unique<Residual>(std::move(body), std::move(shortcut), std::move(input), cpu);
  };
  std::vector<NamedLayer> layers;
  layers.push_back({"conv1", conv(3, 16, 3, 1)});
  layers.push_back({"bn1", std::make_unique<BatchNorm2d>(16, cpu)});
  layers.push_back({"relu1", relu()});
  layers.push_back({"block1", block(16, 16, 1, {16, 10, 10})});
  layers.push_back({"relu2", relu()});
  layers.push_back({"block2", block(16, 32, 2, {16, 10, 10})});
  layers.push_back({"relu3", relu()});
  layers.push_back({"pool", std::make_unique<GlobalAvgPool2d>(cpu)});
  layers.push_back({"fc", std::make_unique<Linear>(32, 10, cpu)});
  auto m = std::make_unique<Model>(std::move(layers), Shape{3, 10, 10}, 10, cpu, "relu after bn");
  m->init_parameters(9);
  return m;
}

TEST(ReluAbsorption, AReluAfterBatchNormOrAResidualBlockIsAbsorbedBitForBit) {
  std::vector<const ReLU*> fast_relus, apart_relus;
  auto fast = relu_after_bn_resnet(false, fast_relus), apart = relu_after_bn_resnet(true, apart_relus);
  ASSERT_EQ(fast_relus.size(), 5u);
  // The fusion pass took every ReLU into a layer before or after it; apart, every ReLU is a layer of its own.
  EXPECT_EQ(layer_table(*fast).find(" (relu) "), std::string::npos) << layer_table(*fast);
  EXPECT_NE(layer_table(*apart).find(" (opaque relu) "), std::string::npos) << layer_table(*apart);
  const Tensor xt = host_tensor(random_vector(4 * 300, 31), {4, 3, 10, 10});
  const Tensor dl = host_tensor(random_vector(4 * 10, 32), {4, 10});
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    EXPECT_EQ(fast->forward(xt).to_host(), apart->forward(xt).to_host()) << "logits";
    fast->backward(dl);
    apart->backward(dl);
    EXPECT_EQ(fast->grads_to_host(), apart->grads_to_host()) << "gradients";
    EXPECT_EQ(fast->buffers_to_host(), apart->buffers_to_host()) << "running statistics";
  }
  fast->set_training(false);
  apart->set_training(false);
  EXPECT_EQ(fast->forward(xt).to_host(), apart->forward(xt).to_host()) << "evaluation logits";
}

TEST(BlockedLayouts, SetLayoutChecksShapeAndResizeResetsIt) {
  Tensor t({2, 16, 3, 3}, Device{});
  t.set_layout(Layout::kNChw16c);
  EXPECT_TRUE(t.blocked());
  EXPECT_EQ(channel_block(t.layout()), 16);
  t.resize({2, 16, 3, 3});
  EXPECT_EQ(t.layout(), Layout::kNchw);
  Tensor odd({2, 12, 3, 3}, Device{});
  EXPECT_THROW(odd.set_layout(Layout::kNChw8c), Error);
  Tensor flat({2, 16}, Device{});
  EXPECT_THROW(flat.set_layout(Layout::kNChw8c), Error);
}

}  // namespace
}  // namespace mirror::nn
