// test_cuda.cc — the CUDA backend against the CPU backend: every op, the layers, the loss, both optimizers
// and whole training steps of a model. Every case GTEST_SKIPs when no CUDA GPU is visible (always in a
// CPU-only build), so CTest reports the binary as skipped there. Tolerances: cuBLAS and oneDNN sum in
// different orders, so products differ by float rounding (~k·u relative); element-wise kernels match closely.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/nn/activation.h"
#include "mirror/nn/device.h"
#include "mirror/nn/dropout.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/ops.h"
#include "mirror/nn/optimizer.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU visible";
    gpu_ = resolve_device("cuda", 0);
  }
  Tensor up(const std::vector<float>& host, Shape shape) {
    Tensor t(std::move(shape), gpu_);
    t.copy_from_host(host);
    return t;
  }
  Device gpu_;
  Device cpu_;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

TEST_F(Cuda, DeviceResolves) {
  EXPECT_TRUE(gpu_.is_cuda());
  EXPECT_TRUE(resolve_device("auto", 0).is_cuda());
  EXPECT_EQ(resolve_device("cuda", cuda_device_count()).index, 0);  // local rank wraps around
}

TEST_F(Cuda, GemmAllTransposesMatchCpu) {
  const std::int64_t m = 33, n = 17, k = 65;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const auto a = random_vector(m * k, 1 + t), b = random_vector(k * n, 5 + t), c = random_vector(m * n, 9 + t);
    const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
    const auto trA = ta ? ops::Trans::kYes : ops::Trans::kNo, trB = tb ? ops::Trans::kYes : ops::Trans::kNo;
    auto want = c;
    ops::gemm(cpu_, trA, trB, m, n, k, 0.75f, a.data(), lda, b.data(), ldb, 0.5f, want.data(), n);
    Tensor da = up(a, {m * k}), db = up(b, {k * n}), dc = up(c, {m * n});
    ops::gemm(gpu_, trA, trB, m, n, k, 0.75f, da.data(), lda, db.data(), ldb, 0.5f, dc.data(), n);
    expect_close(dc.to_host(), want, 1e-5, "gemm");
  }
}

TEST_F(Cuda, ElementwiseOpsMatchCpu) {
  const std::int64_t rows = 70, cols = 13, n = rows * cols;
  const auto x = random_vector(n, 20), bias = random_vector(cols, 21), dy = random_vector(n, 22);
  auto y = x;
  ops::add_row_bias(cpu_, y.data(), bias.data(), rows, cols);
  Tensor dx = up(x, {n}), db = up(bias, {cols});
  ops::add_row_bias(gpu_, dx.data(), db.data(), rows, cols);
  expect_close(dx.to_host(), y, 0, "add_row_bias");

  std::vector<float> sums = random_vector(cols, 23);
  Tensor dsums = up(sums, {cols});
  ops::column_sums(cpu_, x.data(), rows, cols, 1.0f, sums.data());
  Tensor xx = up(x, {n});
  ops::column_sums(gpu_, xx.data(), rows, cols, 1.0f, dsums.data());
  expect_close(dsums.to_host(), sums, 1e-5, "column_sums");

  std::vector<float> r(n), g(n);
  ops::relu_forward(cpu_, x.data(), r.data(), n);
  ops::relu_backward(cpu_, r.data(), dy.data(), g.data(), n);
  Tensor dr({n}, gpu_), dg({n}, gpu_), ddy = up(dy, {n});
  ops::relu_forward(gpu_, xx.data(), dr.data(), n);
  ops::relu_backward(gpu_, dr.data(), ddy.data(), dg.data(), n);
  expect_close(dr.to_host(), r, 0, "relu_forward");
  expect_close(dg.to_host(), g, 0, "relu_backward");

  auto f = x;
  ops::scale(cpu_, f.data(), n, 3.0f);
  ops::axpy(cpu_, n, -0.5f, dy.data(), f.data());
  Tensor df = up(x, {n});
  ops::scale(gpu_, df.data(), n, 3.0f);
  ops::axpy(gpu_, n, -0.5f, ddy.data(), df.data());
  expect_close(df.to_host(), f, 1e-6, "scale/axpy");
  ops::fill(gpu_, df.data(), n, 1.25f);
  for (float v : df.to_host()) ASSERT_EQ(v, 1.25f);
}

TEST_F(Cuda, LinearAndReluLayersMatchCpu) {
  const std::int64_t batch = 37, in = 50, out = 21;
  const auto w = random_vector(out * in, 60), b = random_vector(out, 61), x = random_vector(batch * in, 62);
  const auto dy1 = random_vector(batch * out, 63), dy2 = random_vector(batch * out, 64);
  // CPU layer over host parameters, CUDA layer over device copies; gradients accumulated over two backwards.
  auto hw = w, hb = b;
  std::vector<float> hgw(out * in), hgb(out);
  Tensor gw = up(w, {out * in}), gb = up(b, {out}), ggw({out * in}, gpu_), ggb({out}, gpu_);
  Linear cl(in, out, cpu_), gl(in, out, gpu_);
  const ParamBinding cbind[] = {{hw.data(), hgw.data()}, {hb.data(), hgb.data()}};
  const ParamBinding gbind[] = {{gw.data(), ggw.data()}, {gb.data(), ggb.data()}};
  cl.bind_parameters(cbind);
  gl.bind_parameters(gbind);
  ReLU cr(cpu_), gr(gpu_);
  Tensor cx({batch, in}, cpu_), gx = up(x, {batch, in});
  cx.copy_from_host(x);
  const Tensor& cy = cr.forward(cl.forward(cx));
  const Tensor& gy = gr.forward(gl.forward(gx));
  expect_close(gy.to_host(), cy.to_host(), 1e-5, "forward");
  std::vector<float> cdx, gdx;
  for (int pass = 0; pass < 2; ++pass) {
    const auto& dy = pass == 0 ? dy1 : dy2;
    const GradMode mode = pass == 0 ? GradMode::kOverwrite : GradMode::kAccumulate;
    Tensor cdy({batch, out}, cpu_), gdy = up(dy, {batch, out});
    cdy.copy_from_host(dy);
    cdx = cl.backward(*cr.backward(cdy, mode, true, {}), mode, true, {})->to_host();
    gdx = gl.backward(*gr.backward(gdy, mode, true, {}), mode, true, {})->to_host();
  }
  expect_close(gdx, cdx, 1e-5, "dx");
  expect_close(ggw.to_host(), hgw, 1e-5, "weight grad");
  expect_close(ggb.to_host(), hgb, 1e-5, "bias grad");
}

TEST_F(Cuda, LossMatchesCpu) {
  const std::int64_t rows = 300, cols = 10;
  const auto z = random_vector(rows * cols, 30, -5.0f, 5.0f);
  std::vector<std::int32_t> labels(rows);
  for (std::int64_t r = 0; r < rows; ++r) labels[r] = static_cast<std::int32_t>((r * 7) % cols);
  Tensor cz({rows, cols}, cpu_);
  cz.copy_from_host(z);
  Tensor gz = up(z, {rows, cols});
  SoftmaxCrossEntropy cl(cpu_), gl(gpu_);
  Tensor cd, gd;
  const LossStats cs = cl.forward_backward(cz, labels, cd), gs = gl.forward_backward(gz, labels, gd);
  EXPECT_EQ(gs.correct, cs.correct);
  EXPECT_NEAR(gs.loss_sum, cs.loss_sum, 1e-5 * cs.loss_sum);
  expect_close(gd.to_host(), cd.to_host(), 1e-6, "dlogits");
}

TEST_F(Cuda, OptimizersMatchCpu) {
  const std::int64_t n = 1000;
  for (auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdamW}) {
    const OptimizerOptions o{.kind = kind, .momentum = 0.9f, .nesterov = true, .weight_decay = 0.01f};
    auto co = Optimizer::create(o, n, cpu_), go = Optimizer::create(o, n, gpu_);
    auto p = random_vector(n, 40);
    Tensor gp = up(p, {n});
    for (int s = 0; s < 4; ++s) {
      const auto g = random_vector(n, 41 + s);
      Tensor gg = up(g, {n});
      co->step(p.data(), g.data(), 0.05f);
      go->step(gp.data(), gg.data(), 0.05f);
    }
    expect_close(gp.to_host(), p, 1e-5, to_string(kind));
    for (const auto& name : co->state_names()) expect_close(go->state_to_host(name), co->state_to_host(name), 1e-5, name.c_str());
  }
}

TEST_F(Cuda, ModelTrainingStepsMatchCpu) {
  const std::int64_t batch = 64, in = 784, classes = 10;
  auto cm_owned = build_model("mlp:512,256", {in}, classes, cpu_), gm_owned = build_model("mlp:512,256", {in}, classes, gpu_);
  Model &cm = *cm_owned, &gm = *gm_owned;
  cm.init_parameters(7);
  gm.init_parameters(7);
  EXPECT_EQ(gm.params_to_host(), cm.params_to_host());  // init is computed on the host: bit-identical
  auto co = Optimizer::create({.momentum = 0.9f}, cm.num_parameters(), cpu_);
  auto go = Optimizer::create({.momentum = 0.9f}, gm.num_parameters(), gpu_);
  SoftmaxCrossEntropy cl(cpu_), gl(gpu_);
  Tensor cx({batch, in}, cpu_), gx({batch, in}, gpu_), cd, gd;
  std::vector<std::size_t> order;
  for (int s = 0; s < 3; ++s) {
    const auto x = random_vector(batch * in, 50 + s, 0.0f, 1.0f);
    std::vector<std::int32_t> y(batch);
    for (std::int64_t i = 0; i < batch; ++i) y[i] = static_cast<std::int32_t>((i + s) % classes);
    cx.copy_from_host(x);
    gx.copy_from_host(x);
    const LossStats cs = cl.forward_backward(cm.forward(cx), y, cd);
    const LossStats gs = gl.forward_backward(gm.forward(gx), y, gd);
    EXPECT_NEAR(gs.mean_loss(), cs.mean_loss(), 1e-4);
    cm.backward(cd);
    order.clear();
    gm.backward(gd, GradMode::kOverwrite, [&](std::size_t i) { order.push_back(i); });
    EXPECT_EQ(order, (std::vector<std::size_t>{5, 4, 3, 2, 1, 0}));
    expect_close(gm.grads_to_host(), cm.grads_to_host(), 1e-4, "grads");
    co->step(cm.params(), cm.grads(), 0.1f);
    go->step(gm.params(), gm.grads(), 0.1f);
  }
  expect_close(gm.params_to_host(), cm.params_to_host(), 1e-4, "params after 3 steps");
}

// Dropout's mask is drawn on the GPU from the samples' keys: bit for bit the keyed draw (dropout_uniform, the
// reference the CPU tests use), on a batch of more rows than one launch's constant-memory chunk (4096).
TEST_F(Cuda, DropoutMaskDrawnOnTheGpuIsTheKeyedDrawBitForBit) {
  const float p = 0.35f;
  const std::int64_t batch = 4100, per = 7;
  Dropout d(p, gpu_);
  std::vector<std::int64_t> ids(batch);
  for (std::int64_t i = 0; i < batch; ++i) ids[i] = 50000 - 11 * i;
  ForwardContext ctx;
  ctx.seed = 9;
  ctx.step = 12;
  ctx.sample_ids = ids;
  d.set_forward_context(&ctx);
  const std::vector<float> y = d.forward(up(std::vector<float>(batch * per, 1.0f), {batch, per})).to_host();
  std::int64_t dropped = 0;
  for (std::int64_t r = 0; r < batch; ++r)
    for (std::int64_t e = 0; e < per; ++e) {
      const float want = dropout_uniform(9, 12, ids[r], e) >= p ? 1.0f / (1.0f - p) : 0.0f;
      ASSERT_EQ(y[r * per + e], want) << "row " << r << " element " << e;
      dropped += want == 0.0f;
    }
  EXPECT_GT(dropped, batch * per / 4);  // about 35 %
  EXPECT_LT(dropped, batch * per / 2);
}

// Flatten, Dropout (its mask multiplied on the GPU) and a residual block with a projection shortcut.
TEST_F(Cuda, ResidualDropoutModelMatchesCpu) {
  const char* text = R"({"layers": [{"type": "flatten"}, {"type": "linear", "out_features": 24}, {"type": "relu"},
    {"type": "residual", "body": [{"type": "linear", "out_features": 16}, {"type": "relu"},
     {"type": "linear", "out_features": 16}], "shortcut": [{"type": "linear", "out_features": 16, "bias": false}]},
    {"type": "dropout", "p": 0.4}, {"type": "linear", "out_features": "classes"}]})";
  const ModelDescription d = ModelDescription::parse(text, "test");
  auto cm = build_model(d, {2, 5, 5}, 7, cpu_);
  auto gm = build_model(d, {2, 5, 5}, 7, gpu_);
  cm->init_parameters(3);
  gm->params_from_host(cm->params_to_host());
  const std::int64_t batch = 9;
  const auto x = random_vector(batch * 50, 8);
  Tensor cx({batch, 2, 5, 5}, cpu_), gx({batch, 2, 5, 5}, gpu_), cd, gd;
  cx.copy_from_host(x);
  gx.copy_from_host(x);
  std::vector<std::int64_t> ids(batch);
  for (std::int64_t i = 0; i < batch; ++i) ids[i] = 100 + 3 * i;
  ForwardContext ctx;
  ctx.seed = 4;
  ctx.step = 2;
  ctx.sample_ids = ids;
  std::vector<std::int32_t> y(batch);
  for (std::int64_t i = 0; i < batch; ++i) y[i] = static_cast<std::int32_t>(i % 7);
  SoftmaxCrossEntropy cl(cpu_), gl(gpu_);
  const LossStats cs = cl.forward_backward(cm->forward(cx, ctx), y, cd);
  const LossStats gs = gl.forward_backward(gm->forward(gx, ctx), y, gd);
  EXPECT_NEAR(gs.mean_loss(), cs.mean_loss(), 1e-4);
  cm->backward(cd);
  gm->backward(gd);
  expect_close(gm->grads_to_host(), cm->grads_to_host(), 1e-4, "grads");
}

}  // namespace
}  // namespace mirror::nn
