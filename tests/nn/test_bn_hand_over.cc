// test_bn_hand_over.cc — a BatchNorm2d that hands its normalisation to the layer consuming its output (bn_hand_over.h)
// computes bit for bit what the layers compute apart — logits, every gradient (overwritten and accumulated), the
// running statistics, over three training steps and in evaluation — on blocked inputs of both block sizes (8 and
// 16, fed by a test layer, whatever the CPU's oneDNN would pick). Consumers: the 2×2 max pooling after it
// (chain_fusion.h: the pooling normalises as it reads and hands its gradient and winners back instead of dx), with
// and without a ReLU between them, the pooled output left blocked or reordered to NCHW for a Flatten, on even and
// odd planes (a last row and column in no window); and the add of a residual block whose body it ends, with and
// without the ReLU after the block, with an identity and a BatchNorm shortcut. apart: the BatchNorm wrapped in a
// layer nothing recognises, so nothing is handed over and the layers run as test_nn_batch_norm,
// test_nn_pool_layers and test_nn_layers check them against plain loops. The fused runs must really have fused
// (Pool2d::normalised_input, Residual::normalised_body), the apart ones not. Also a ReLU absorbed by the BatchNorm
// before it (its backward mask recomputed from x) against the ReLU apart, on NCHW and both blocked layouts.
// Parameters are random, so γ and β are not 1 and 0.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "forwarding_layer.h"
#include "layer_checks.h"
#include "mirror/nn/activation.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/flatten.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/max_pool2d.h"
#include "mirror/nn/model.h"
#include "mirror/nn/residual.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::blocked_index;
using testing::host_tensor;
using testing::random_vector;

// NCHW in, the same values in `layout` out (tensor.h's index formula); dy back to NCHW.
class ToBlocked final : public Layer {
 public:
  explicit ToBlocked(Layout layout) : layout_(layout) {}
  std::string kind() const override { return "to blocked"; }
  Shape output_sample_shape(const Shape& s) const override { return s; }
  const Tensor& forward(const Tensor& x) override {
    const std::vector<float> nchw = x.to_host();
    std::vector<float> out(nchw.size());
    each(x.shape(), [&](std::int64_t plain, std::int64_t blocked) { out[blocked] = nchw[plain]; });
    y_ = Tensor(x.shape(), Device{});
    y_.copy_from_host(out);
    y_.set_layout(layout_);
    return y_;
  }
  const Tensor* backward(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) override {
    EXPECT_EQ(dy.layout(), layout_);
    const std::vector<float> blocked = dy.to_host();
    std::vector<float> out(blocked.size());
    each(dy.shape(), [&](std::int64_t plain, std::int64_t b) { out[plain] = blocked[b]; });
    dx_ = Tensor(dy.shape(), Device{});
    dx_.copy_from_host(out);
    return &dx_;
  }

 private:
  template <typename F>
  void each(const Shape& s, F f) const {
    const std::int64_t area = s[2] * s[3];
    for (std::int64_t n = 0; n < s[0]; ++n)
      for (std::int64_t c = 0; c < s[1]; ++c)
        for (std::int64_t i = 0; i < area; ++i)
          f((n * s[1] + c) * area + i, blocked_index(s, channel_block(layout_), n, c, i));
  }
  Layout layout_;
  Tensor y_, dx_;
};

// A BatchNorm2d, every call forwarded, but none to the chain: nothing is handed over.
class OpaqueBatchNorm final : public testing::ForwardingLayer {
 public:
  explicit OpaqueBatchNorm(std::int64_t channels)
      : ForwardingLayer(std::make_unique<BatchNorm2d>(channels, Device{})) {}
};

// The identity on any layout, so that the pooling may leave its output blocked.
class Passthrough final : public Layer {
 public:
  Passthrough() { accepts_blocked_ = true; }
  std::string kind() const override { return "passthrough"; }
  Shape output_sample_shape(const Shape& s) const override { return s; }
  const Tensor& forward(const Tensor& x) override { return x; }
  const Tensor* backward(const Tensor& dy, GradMode, bool, const LayerGradReady&) override { return &dy; }
};

struct Case {
  Layout layout;
  bool relu;
  bool blocked_out;  // the pooling's output stays blocked (else NCHW, for the Flatten)
  std::int64_t h, w;
};

std::string name_of(const Case& c) {
  return std::string(to_string(c.layout)) + (c.relu ? " relu" : " no relu") + (c.blocked_out ? " blocked out " : " nchw out ") +
         std::to_string(c.h) + "x" + std::to_string(c.w);
}

void PrintTo(const Case& c, std::ostream* os) { *os << name_of(c); }

constexpr std::int64_t kChannels = 16, kBatch = 3, kClasses = 5;

// ToBlocked, BatchNorm2d (or its opaque wrapper), [ReLU], MaxPool 2×2, [Passthrough], Flatten, Linear.
std::unique_ptr<Model> chain(const Case& c, bool apart, MaxPool2d*& pool) {
  const Device cpu{};
  std::vector<NamedLayer> layers;
  layers.push_back({"blocks", std::make_unique<ToBlocked>(c.layout)});
  if (apart)
    layers.push_back({"bn", std::make_unique<OpaqueBatchNorm>(kChannels)});
  else
    layers.push_back({"bn", std::make_unique<BatchNorm2d>(kChannels, cpu)});
  if (c.relu) layers.push_back({"relu", std::make_unique<ReLU>(cpu)});
  auto p = std::make_unique<MaxPool2d>(2, 2, 2, 2, 0, 0, cpu);
  pool = p.get();
  layers.push_back({"pool", std::move(p)});
  if (c.blocked_out) layers.push_back({"through", std::make_unique<Passthrough>()});
  layers.push_back({"flatten", std::make_unique<Flatten>()});
  layers.push_back({"fc", std::make_unique<Linear>(kChannels * (c.h / 2) * (c.w / 2), kClasses, cpu)});
  auto m = std::make_unique<Model>(std::move(layers), Shape{kChannels, c.h, c.w}, kClasses, cpu, name_of(c));
  m->init_parameters(17);
  return m;
}

// With the same random parameters: three training steps (the third accumulating gradients) and an evaluation
// forward of both models on the same
// batches of shape `batch` (values with a per-channel offset, so the statistics are not those of centred data),
// compared bit for bit; after every forward `handed_over` says whether the fused model's consumer took the map.
void expect_same_bits(Model& fused, Model& apart, const Shape& batch, unsigned seed,
                      const std::function<bool()>& fused_handed_over, const std::function<bool()>& apart_handed_over) {
  const std::int64_t area = batch[2] * batch[3], numel = shape_numel(batch);
  // Random parameters (γ and β away from 1 and 0, so every term of the map counts), the same in both.
  const std::vector<float> params = random_vector(static_cast<std::size_t>(fused.num_parameters()), seed + 30);
  fused.params_from_host(params);
  apart.params_from_host(params);
  auto input = [&](unsigned s) {
    std::vector<float> v = random_vector(static_cast<std::size_t>(numel), s);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += 0.25f * static_cast<float>(i / area % batch[1]);
    return host_tensor(v, batch);
  };
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor x = input(seed + step);
    const Tensor dl = host_tensor(random_vector(batch[0] * kClasses, seed + 10 + step), {batch[0], kClasses});
    EXPECT_EQ(fused.forward(x).to_host(), apart.forward(x).to_host()) << "logits";
    EXPECT_TRUE(fused_handed_over()) << "nothing was handed over: nothing was tested";
    EXPECT_FALSE(apart_handed_over());
    const GradMode mode = step == 2 ? GradMode::kAccumulate : GradMode::kOverwrite;
    fused.backward(dl, mode);
    apart.backward(dl, mode);
    EXPECT_EQ(fused.grads_to_host(), apart.grads_to_host()) << "gradients";
    EXPECT_EQ(fused.buffers_to_host(), apart.buffers_to_host()) << "running statistics";
  }
  fused.set_training(false);
  apart.set_training(false);
  const Tensor x = input(seed + 20);
  EXPECT_EQ(fused.forward(x).to_host(), apart.forward(x).to_host()) << "evaluation logits";
  EXPECT_TRUE(fused_handed_over());
}

// Test names from a case's words.
template <typename C>
std::string test_name(const ::testing::TestParamInfo<C>& info) {
  std::string n = name_of(info.param);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

class BnPoolHandOver : public ::testing::TestWithParam<Case> {};

TEST_P(BnPoolHandOver, ComputesWhatTheLayersComputeApartBitForBit) {
  const Case& c = GetParam();
  MaxPool2d *fused_pool = nullptr, *apart_pool = nullptr;
  auto fused = chain(c, false, fused_pool), apart = chain(c, true, apart_pool);
  expect_same_bits(*fused, *apart, {kBatch, kChannels, c.h, c.w}, 50, [&] { return fused_pool->normalised_input(); },
                   [&] { return apart_pool->normalised_input(); });
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, BnPoolHandOver,
    ::testing::Values(Case{Layout::kNChw16c, true, false, 8, 8}, Case{Layout::kNChw16c, true, true, 9, 7},
                      Case{Layout::kNChw16c, false, true, 8, 6}, Case{Layout::kNChw16c, false, false, 7, 9},
                      Case{Layout::kNChw8c, true, false, 9, 9}, Case{Layout::kNChw8c, true, true, 6, 8},
                      Case{Layout::kNChw8c, false, false, 8, 8}, Case{Layout::kNChw8c, false, true, 5, 7}),
    test_name<Case>);

// An NCHW input (a first layer's, or a CPU whose oneDNN keeps NCHW) is normalised by the BatchNorm itself.
TEST(BnHandOverNchw, AnNchwInputIsNormalisedByTheBatchNorm) {
  const Device cpu{};
  std::vector<NamedLayer> layers;
  layers.push_back({"bn", std::make_unique<BatchNorm2d>(4, cpu)});
  layers.push_back({"relu", std::make_unique<ReLU>(cpu)});
  auto p = std::make_unique<MaxPool2d>(2, 2, 2, 2, 0, 0, cpu);
  MaxPool2d* pool = p.get();
  layers.push_back({"pool", std::move(p)});
  layers.push_back({"flatten", std::make_unique<Flatten>()});
  layers.push_back({"fc", std::make_unique<Linear>(4 * 3 * 3, 2, cpu)});
  Model m(std::move(layers), Shape{4, 6, 6}, 2, cpu, "nchw");
  m.init_parameters(3);
  m.forward(host_tensor(random_vector(2 * 144, 80), {2, 4, 6, 6}));
  EXPECT_FALSE(pool->normalised_input());
}

struct BlockCase {
  Layout layout;
  bool relu_after;         // a ReLU after the block (absorbed by it)
  bool batchnorm_shortcut;  // else the identity
};

std::string name_of(const BlockCase& c) {
  return std::string(to_string(c.layout)) + (c.relu_after ? " relu" : " no relu") +
         (c.batchnorm_shortcut ? " bn shortcut" : " identity");
}
void PrintTo(const BlockCase& c, std::ostream* os) { *os << name_of(c); }

// ToBlocked, a residual block (body: BatchNorm2d, ReLU, BatchNorm2d or its opaque wrapper; shortcut: the identity or
// a BatchNorm2d), [ReLU], Flatten, Linear, on 16×6×5 samples.
std::unique_ptr<Model> block_chain(const BlockCase& c, bool apart, Residual*& block) {
  const Device cpu{};
  const Shape sample{kChannels, 6, 5};
  std::vector<NamedLayer> body, shortcut, layers;
  body.push_back({"bn1", std::make_unique<BatchNorm2d>(kChannels, cpu)});
  body.push_back({"relu", std::make_unique<ReLU>(cpu)});
  if (apart)
    body.push_back({"bn2", std::make_unique<OpaqueBatchNorm>(kChannels)});
  else
    body.push_back({"bn2", std::make_unique<BatchNorm2d>(kChannels, cpu)});
  if (c.batchnorm_shortcut) shortcut.push_back({"bn", std::make_unique<BatchNorm2d>(kChannels, cpu)});
  auto r = std::make_unique<Residual>(std::move(body), std::move(shortcut), sample, cpu);
  block = r.get();
  layers.push_back({"blocks", std::make_unique<ToBlocked>(c.layout)});
  layers.push_back({"block", std::move(r)});
  if (c.relu_after) layers.push_back({"relu", std::make_unique<ReLU>(cpu)});
  layers.push_back({"flatten", std::make_unique<Flatten>()});
  layers.push_back({"fc", std::make_unique<Linear>(kChannels * 6 * 5, kClasses, cpu)});
  auto m = std::make_unique<Model>(std::move(layers), sample, kClasses, cpu, name_of(c));
  m->init_parameters(19);
  return m;
}

class BnResidualHandOver : public ::testing::TestWithParam<BlockCase> {};

TEST_P(BnResidualHandOver, ComputesWhatTheLayersComputeApartBitForBit) {
  const BlockCase& c = GetParam();
  Residual *fused_block = nullptr, *apart_block = nullptr;
  auto fused = block_chain(c, false, fused_block), apart = block_chain(c, true, apart_block);
  expect_same_bits(*fused, *apart, {kBatch, kChannels, 6, 5}, 90, [&] { return fused_block->normalised_body(); },
                   [&] { return apart_block->normalised_body(); });
}

INSTANTIATE_TEST_SUITE_P(Layouts, BnResidualHandOver,
                         ::testing::Values(BlockCase{Layout::kNChw16c, true, false},
                                           BlockCase{Layout::kNChw16c, false, true},
                                           BlockCase{Layout::kNChw8c, true, true},
                                           BlockCase{Layout::kNChw8c, false, false}),
                         test_name<BlockCase>);

// A ReLU after a BatchNorm2d that no pooling takes is the BatchNorm's (chain_fusion.h), which masks dy in its
// backward loops where its forward's normalised value was positive, recomputed from x: ToBlocked (or NCHW),
// BatchNorm2d, ReLU (or the same ReLU hidden from the chain), Flatten, Linear.
std::unique_ptr<Model> bn_relu_chain(Layout layout, bool apart, const BatchNorm2d*& bn) {
  const Device cpu{};
  const Shape sample{kChannels, 5, 6};
  std::vector<NamedLayer> layers;
  if (layout != Layout::kNchw) layers.push_back({"blocks", std::make_unique<ToBlocked>(layout)});
  auto b = std::make_unique<BatchNorm2d>(kChannels, cpu);
  bn = b.get();
  layers.push_back({"bn", std::move(b)});
  auto r = std::make_unique<ReLU>(cpu);
  if (apart)
    layers.push_back({"relu", std::make_unique<testing::ForwardingLayer>(std::move(r))});
  else
    layers.push_back({"relu", std::move(r)});
  layers.push_back({"flatten", std::make_unique<Flatten>()});
  layers.push_back({"fc", std::make_unique<Linear>(kChannels * 5 * 6, kClasses, cpu)});
  auto m = std::make_unique<Model>(std::move(layers), sample, kClasses, cpu, "bn relu");
  m->init_parameters(23);
  return m;
}

class BnReluAbsorbed : public ::testing::TestWithParam<Layout> {};

TEST_P(BnReluAbsorbed, MasksWhatTheReluMasksBitForBit) {
  const BatchNorm2d *fused_bn = nullptr, *apart_bn = nullptr;
  auto fused = bn_relu_chain(GetParam(), false, fused_bn), apart = bn_relu_chain(GetParam(), true, apart_bn);
  // The fused model's BatchNorm applies the ReLU (batchnorm2d+relu); the other's stays apart.
  expect_same_bits(*fused, *apart, {kBatch, kChannels, 5, 6}, 110, [&] { return fused_bn->kind() == "batchnorm2d+relu"; },
                   [&] { return apart_bn->kind() == "batchnorm2d+relu"; });
}

INSTANTIATE_TEST_SUITE_P(Layouts, BnReluAbsorbed,
                         ::testing::Values(Layout::kNchw, Layout::kNChw8c, Layout::kNChw16c),
                         [](const ::testing::TestParamInfo<Layout>& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace mirror::nn
