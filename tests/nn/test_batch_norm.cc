// test_batch_norm.cc — BatchNorm2d against a plain-loop BatchNorm in double: training forward (batch mean,
// biased variance), the running-statistics update (momentum, unbiased variance), evaluation with the running
// statistics, backward against central differences of the double reference loss in both modes, kAccumulate,
// grad_ready order; and SyncBN: replicas in threads, each with part of a batch (uneven parts) and a reducer
// that really exchanges their values, give the outputs, input gradients and running statistics of one layer
// over the whole batch (and of the double reference, with a large mean), and parameter gradients that add up
// to its.
#include <gtest/gtest.h>

#include <barrier>
#include <thread>

#include "layer_checks.h"
#include "mirror/error.h"
#include "mirror/nn/batch_norm2d.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::central_differences;
using testing::expect_close;
using testing::host_tensor;
using testing::random_vector;
using testing::to_double;
using testing::weighted;

struct BnCase {
  std::int64_t n, c, h, w;
  Shape shape() const { return {n, c, h, w}; }
  std::int64_t numel() const { return n * c * h * w; }
};

struct BnStats {
  std::vector<double> mean, var;  // biased variance
};

BnStats batch_stats_ref(const BnCase& k, const std::vector<double>& x) {
  BnStats s{std::vector<double>(k.c, 0.0), std::vector<double>(k.c, 0.0)};
  const double m = static_cast<double>(k.n * k.h * k.w);
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t c = 0; c < k.c; ++c)
      for (std::int64_t i = 0; i < k.h * k.w; ++i) s.mean[c] += x[(n * k.c + c) * k.h * k.w + i] / m;
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t c = 0; c < k.c; ++c)
      for (std::int64_t i = 0; i < k.h * k.w; ++i) {
        const double d = x[(n * k.c + c) * k.h * k.w + i] - s.mean[c];
        s.var[c] += d * d / m;
      }
  return s;
}

// y = γ (x − mean) / sqrt(var + eps) + β with the given statistics.
std::vector<double> normalise_ref(const BnCase& k, const std::vector<double>& x, const BnStats& s,
                                  const std::vector<double>& g, const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t c = 0; c < k.c; ++c)
      for (std::int64_t i = 0; i < k.h * k.w; ++i) {
        const std::int64_t at = (n * k.c + c) * k.h * k.w + i;
        y[at] = g[c] * (x[at] - s.mean[c]) / std::sqrt(s.var[c] + eps) + b[c];
      }
  return y;
}

struct BnFixture {
  BnCase k;
  std::vector<float> x, gamma, beta, dgamma, dbeta, running_mean, running_var;
  BatchNorm2d layer;
  Tensor xt;
  explicit BnFixture(const BnCase& kc, unsigned seed = 3, float shift = 0.5f)
      : k(kc),
        x(random_vector(kc.numel(), seed, -1.0f + shift, 2.0f + shift)),
        gamma(random_vector(kc.c, seed + 1, 0.5f, 1.5f)),
        beta(random_vector(kc.c, seed + 2)),
        dgamma(kc.c, -9.0f),
        dbeta(kc.c, -9.0f),
        running_mean(random_vector(kc.c, seed + 3)),
        running_var(random_vector(kc.c, seed + 4, 0.5f, 2.0f)),
        layer(kc.c, Device{}),
        xt(host_tensor(x, kc.shape())) {
    const ParamBinding bindings[] = {{gamma.data(), dgamma.data()}, {beta.data(), dbeta.data()}};
    layer.bind_parameters(bindings);
    float* const buffers[] = {running_mean.data(), running_var.data()};
    layer.bind_buffers(buffers);
  }
};

class BnShapes : public ::testing::TestWithParam<BnCase> {};

TEST_P(BnShapes, TrainingForwardAndRunningStatisticsMatchTheFormulas) {
  BnFixture f(GetParam());
  const auto rm0 = f.running_mean, rv0 = f.running_var;
  const auto xd = to_double(f.x);
  const BnStats s = batch_stats_ref(f.k, xd);
  expect_close(f.layer.forward(f.xt).to_host(),
               normalise_ref(f.k, xd, s, to_double(f.gamma), to_double(f.beta), 1e-5), 2e-5, "y");
  const double m = static_cast<double>(f.k.n * f.k.h * f.k.w);
  for (std::int64_t c = 0; c < f.k.c; ++c) {
    EXPECT_NEAR(f.running_mean[c], 0.9 * rm0[c] + 0.1 * s.mean[c], 1e-6) << "running_mean " << c;
    EXPECT_NEAR(f.running_var[c], 0.9 * rv0[c] + 0.1 * s.var[c] * m / (m - 1), 1e-6) << "running_var " << c;
  }
}

TEST_P(BnShapes, TrainingBackwardMatchesFiniteDifferencesOfTheReference) {
  BnFixture f(GetParam());
  const auto r = random_vector(f.k.numel(), 41);
  const auto xd = to_double(f.x), gd = to_double(f.gamma), bd = to_double(f.beta);
  f.layer.forward(f.xt);
  std::vector<std::size_t> ready;
  const Tensor* dx = f.layer.backward(host_tensor(r, f.k.shape()), GradMode::kOverwrite, true,
                                      [&](std::size_t i) { ready.push_back(i); });
  ASSERT_NE(dx, nullptr);
  EXPECT_EQ(ready, (std::vector<std::size_t>{1, 0}));
  auto loss = [&](const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& b) {
    return weighted(normalise_ref(f.k, x, batch_stats_ref(f.k, x), g, b, 1e-5), r);
  };
  // The reference is smooth: h = 1e-4 leaves a truncation error ~h² |L'''| ≈ 1e-8 and rounding ~1e-11.
  const double h = 1e-4;
  expect_close(dx->to_host(), central_differences([&](const auto& v) { return loss(v, gd, bd); }, xd, h), 2e-4, "dx");
  expect_close(f.dgamma, central_differences([&](const auto& v) { return loss(xd, v, bd); }, gd, h), 1e-4, "dgamma");
  expect_close(f.dbeta, central_differences([&](const auto& v) { return loss(xd, gd, v); }, bd, h), 1e-4, "dbeta");
}

TEST_P(BnShapes, EvaluationUsesRunningStatisticsAndLeavesThem) {
  BnFixture f(GetParam());
  f.layer.set_training(false);
  const auto rm0 = f.running_mean, rv0 = f.running_var;
  const auto xd = to_double(f.x), gd = to_double(f.gamma), bd = to_double(f.beta);
  const BnStats running{to_double(rm0), to_double(rv0)};
  expect_close(f.layer.forward(f.xt).to_host(), normalise_ref(f.k, xd, running, gd, bd, 1e-5), 2e-5, "y");
  EXPECT_EQ(f.running_mean, rm0);
  EXPECT_EQ(f.running_var, rv0);
  const auto r = random_vector(f.k.numel(), 42);
  const Tensor* dx = f.layer.backward(host_tensor(r, f.k.shape()), GradMode::kOverwrite, true, {});
  auto loss = [&](const std::vector<double>& x, const std::vector<double>& g) {
    return weighted(normalise_ref(f.k, x, running, g, bd, 1e-5), r);
  };
  expect_close(dx->to_host(), central_differences([&](const auto& v) { return loss(v, gd); }, xd, 1e-4), 1e-4, "dx");
  expect_close(f.dgamma, central_differences([&](const auto& v) { return loss(xd, v); }, gd, 1e-4), 1e-4, "dgamma");
}

TEST_P(BnShapes, AccumulateAddsToGradients) {
  BnFixture f(GetParam());
  const Tensor dy = host_tensor(random_vector(f.k.numel(), 43), f.k.shape());
  f.layer.forward(f.xt);
  EXPECT_EQ(f.layer.backward(dy, GradMode::kOverwrite, false, {}), nullptr);
  const auto g1 = f.dgamma, b1 = f.dbeta;
  const auto g0 = random_vector(f.k.c, 44), b0 = random_vector(f.k.c, 45);
  f.dgamma = g0;
  f.dbeta = b0;
  f.layer.backward(dy, GradMode::kAccumulate, false, {});
  for (std::int64_t c = 0; c < f.k.c; ++c) {
    ASSERT_NEAR(f.dgamma[c], g0[c] + g1[c], 1e-5);
    ASSERT_NEAR(f.dbeta[c], b0[c] + b1[c], 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, BnShapes,
                         ::testing::Values(BnCase{4, 3, 5, 6}, BnCase{1, 5, 3, 7}, BnCase{3, 7, 2, 2},
                                           BnCase{2, 1, 9, 4},
                                           // a plane of 143: one vectorised group of 128 and a partial tail
                                           BnCase{2, 3, 13, 11}));

// Blocked batches (nChw8c / nChw16c, built by the index formula of tensor.h): y and dx come back in the same
// layout and, read back by that formula, match the double reference and its central differences.
TEST(BatchNorm2dBlocked, BlockedBatchesMatchTheReferenceInTrainingAndEvaluation) {
  for (const BnCase k : {BnCase{3, 16, 5, 7}, BnCase{2, 8, 3, 3}, BnCase{1, 32, 4, 4}})
    for (const Layout layout : {Layout::kNChw8c, Layout::kNChw16c})
      for (const bool training : {true, false}) {
        if (k.c % channel_block(layout) != 0) continue;
        SCOPED_TRACE(to_string(k.shape()) + " " + to_string(layout) + (training ? " training" : " evaluation"));
        BnFixture f(k);
        f.layer.set_training(training);
        const auto rm0 = f.running_mean, rv0 = f.running_var;
        const auto xd = to_double(f.x), gd = to_double(f.gamma), bd = to_double(f.beta);
        const BnStats running{to_double(rm0), to_double(rv0)};
        const auto stats = [&](const std::vector<double>& x) { return training ? batch_stats_ref(k, x) : running; };
        const Tensor xb = testing::blocked_tensor(f.x, k.shape(), layout);
        const Tensor& y = f.layer.forward(xb);
        EXPECT_EQ(y.layout(), layout);
        expect_close(testing::nchw_values(y), normalise_ref(k, xd, stats(xd), gd, bd, 1e-5), 2e-5, "y");
        if (training) {
          const double m = static_cast<double>(k.n * k.h * k.w);
          const BnStats s = stats(xd);
          for (std::int64_t c = 0; c < k.c; ++c) {
            EXPECT_NEAR(f.running_mean[c], 0.9 * rm0[c] + 0.1 * s.mean[c], 1e-6) << "running_mean " << c;
            EXPECT_NEAR(f.running_var[c], 0.9 * rv0[c] + 0.1 * s.var[c] * m / (m - 1), 1e-6) << "running_var " << c;
          }
        }
        const auto r = random_vector(k.numel(), 41);
        const Tensor* dx = f.layer.backward(testing::blocked_tensor(r, k.shape(), layout), GradMode::kOverwrite, true, {});
        ASSERT_NE(dx, nullptr);
        EXPECT_EQ(dx->layout(), layout);
        auto loss = [&](const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& b) {
          return weighted(normalise_ref(k, x, stats(x), g, b, 1e-5), r);
        };
        const double h = 1e-4;
        expect_close(testing::nchw_values(*dx), central_differences([&](const auto& v) { return loss(v, gd, bd); }, xd, h),
                     2e-4, "dx");
        expect_close(f.dgamma, central_differences([&](const auto& v) { return loss(xd, v, bd); }, gd, h), 1e-4,
                     "dgamma");
        expect_close(f.dbeta, central_differences([&](const auto& v) { return loss(xd, gd, v); }, bd, h), 1e-4, "dbeta");
      }
}

// The loops sum in the same order on every layout (batch_norm2d_cpu.cc), so a blocked batch gives the NCHW
// batch's bits: y, dx, the parameter gradients and the running statistics.
TEST(BatchNorm2dBlocked, BlockedAndNchwGiveTheSameBits) {
  for (const BnCase k : {BnCase{2, 16, 13, 11}, BnCase{3, 8, 4, 5}, BnCase{1, 16, 16, 9}})
    for (const Layout layout : {Layout::kNChw8c, Layout::kNChw16c}) {
      if (k.c % channel_block(layout) != 0) continue;
      SCOPED_TRACE(to_string(k.shape()) + " " + to_string(layout));
      BnFixture plain(k), blocked(k);
      const auto r = random_vector(k.numel(), 43);
      const auto y = plain.layer.forward(plain.xt).to_host();
      const auto dx = plain.layer.backward(host_tensor(r, k.shape()), GradMode::kOverwrite, true, {})->to_host();
      const Tensor xb = testing::blocked_tensor(blocked.x, k.shape(), layout);  // backward reads it again
      const auto yb = testing::nchw_values(blocked.layer.forward(xb));
      const Tensor* dxb =
          blocked.layer.backward(testing::blocked_tensor(r, k.shape(), layout), GradMode::kOverwrite, true, {});
      EXPECT_EQ(yb, y);
      EXPECT_EQ(testing::nchw_values(*dxb), dx);
      EXPECT_EQ(blocked.dgamma, plain.dgamma);
      EXPECT_EQ(blocked.dbeta, plain.dbeta);
      EXPECT_EQ(blocked.running_mean, plain.running_mean);
      EXPECT_EQ(blocked.running_var, plain.running_var);
    }
}

TEST(BatchNorm2dBlocked, RefusesADyInAnotherLayout) {
  BnFixture f(BnCase{2, 8, 3, 3});
  const Tensor xb = testing::blocked_tensor(f.x, f.k.shape(), Layout::kNChw8c);
  f.layer.forward(xb);
  EXPECT_THROW(f.layer.backward(host_tensor(f.x, f.k.shape()), GradMode::kOverwrite, true, {}), Error);
}

TEST(BatchNorm2d, DeclaresParametersAndBuffers) {
  BatchNorm2d bn(7, Device{});
  const auto p = bn.parameter_specs();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "weight");
  EXPECT_EQ(p[1].name, "bias");
  EXPECT_EQ(p[0].shape, (Shape{7}));
  const auto b = bn.buffer_specs();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "running_mean");
  EXPECT_EQ(b[0].initial_value, 0.0f);
  EXPECT_EQ(b[1].name, "running_var");
  EXPECT_EQ(b[1].initial_value, 1.0f);
  EXPECT_EQ(b[1].shape, (Shape{7}));
  std::vector<float> g(7), beta(7, 3.0f);
  bn.init_parameter(0, g, 1);
  bn.init_parameter(1, beta, 1);
  for (int c = 0; c < 7; ++c) {
    EXPECT_EQ(g[c], 1.0f);
    EXPECT_EQ(beta[c], 0.0f);
  }
  EXPECT_EQ(bn.momentum(), 0.1f);
  EXPECT_EQ(bn.eps(), 1e-5f);
}

TEST(BatchNorm2d, RefusesBadInput) {
  EXPECT_THROW(BatchNorm2d(0, Device{}), Error);
  EXPECT_THROW(BatchNorm2d(3, Device{}, 1.5f), Error);
  EXPECT_THROW(BatchNorm2d(3, Device{}, 0.1f, 0.0f), Error);
  BnFixture f(BnCase{1, 3, 1, 1});
  EXPECT_THROW(f.layer.output_sample_shape({4, 2, 2}), Error);
  EXPECT_THROW(f.layer.forward(f.xt), Error);  // one value per channel: no variance
  f.layer.set_training(false);
  EXPECT_NO_THROW(f.layer.forward(f.xt));  // evaluation needs none
}

TEST(BatchNorm2d, LargeMeanSmallSpreadKeepsItsVariance) {
  // Mean 1000, spread 1e-2: a one-pass Σx² − (Σx)²/M in float would lose the variance entirely.
  BnFixture f(BnCase{4, 3, 8, 8}, 5, 0.0f);
  for (auto& v : f.x) v = 1000.0f + 0.01f * v;
  f.xt.copy_from_host(f.x);
  const auto xd = to_double(f.x);
  expect_close(f.layer.forward(f.xt).to_host(),
               normalise_ref(f.k, xd, batch_stats_ref(f.k, xd), to_double(f.gamma), to_double(f.beta), 1e-5), 1e-4,
               "y");
}

// Replicas as threads: sum() and gather() publish this replica's values, wait for all, combine every
// replica's values in replica order (so each replica gets bit-identical results), and wait again before the
// slots can be reused.
struct SharedSlots {
  explicit SharedSlots(int replicas) : slots(replicas), sync(replicas) {}
  std::vector<std::vector<float>> slots;
  std::barrier<> sync;
};

class ThreadReducer final : public ReplicaReducer {
 public:
  ThreadReducer(SharedSlots& shared, int replica) : shared_(shared), replica_(replica) {}
  void sum(float* data, std::size_t count) override {
    ++sums;
    publish(data, count);
    for (std::size_t i = 0; i < count; ++i) {
      float s = 0;
      for (const auto& slot : shared_.slots) s += slot.at(i);
      data[i] = s;
    }
    shared_.sync.arrive_and_wait();
  }
  void gather(const float* mine, float* all, std::size_t count) override {
    ++gathers;
    publish(mine, count);
    for (std::size_t r = 0; r < shared_.slots.size(); ++r)
      std::copy(shared_.slots[r].begin(), shared_.slots[r].end(), all + r * count);
    shared_.sync.arrive_and_wait();
  }
  int replicas() const override { return static_cast<int>(shared_.slots.size()); }
  int sums = 0, gathers = 0;

 private:
  void publish(const float* data, std::size_t count) {
    shared_.slots[replica_].assign(data, data + count);
    shared_.sync.arrive_and_wait();
  }
  SharedSlots& shared_;
  int replica_;
};

// What one replica of a synchronised layer computed from its samples.
struct Replica {
  std::vector<float> x, r, gamma, beta, dgamma, dbeta, rm, rv, y, dx;
  std::int64_t n = 0;
  int sums = 0, gathers = 0;
};

// Splits `whole`'s batch (x, upstream gradient r, the parameters and running statistics of `init`) at the
// sample counts `counts` and runs one forward and backward of a synchronised layer per part, each in its own
// thread with a ThreadReducer.
std::vector<Replica> run_replicas(const BnCase& whole, const BnFixture& init, const std::vector<float>& r,
                                  const std::vector<std::int64_t>& counts) {
  const std::int64_t sample = whole.c * whole.h * whole.w;
  std::vector<Replica> reps(counts.size());
  std::int64_t begin = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    Replica& p = reps[k];
    p.n = counts[k];
    p.x.assign(init.x.begin() + begin * sample, init.x.begin() + (begin + p.n) * sample);
    p.r.assign(r.begin() + begin * sample, r.begin() + (begin + p.n) * sample);
    p.gamma = init.gamma;
    p.beta = init.beta;
    p.dgamma.assign(whole.c, -9.0f);
    p.dbeta.assign(whole.c, -9.0f);
    p.rm = init.running_mean;
    p.rv = init.running_var;
    begin += p.n;
  }
  SharedSlots shared(static_cast<int>(counts.size()));
  auto run = [&](std::size_t k) {
    Replica& p = reps[k];
    BatchNorm2d bn(whole.c, Device{});
    const ParamBinding bindings[] = {{p.gamma.data(), p.dgamma.data()}, {p.beta.data(), p.dbeta.data()}};
    bn.bind_parameters(bindings);
    float* const buffers[] = {p.rm.data(), p.rv.data()};
    bn.bind_buffers(buffers);
    ThreadReducer reducer(shared, static_cast<int>(k));
    ForwardContext context;
    context.reducer = &reducer;
    bn.set_forward_context(&context);
    const Tensor x = host_tensor(p.x, {p.n, whole.c, whole.h, whole.w});
    p.y = bn.forward(x).to_host();
    p.dx = bn.backward(host_tensor(p.r, {p.n, whole.c, whole.h, whole.w}), GradMode::kOverwrite, true, {})->to_host();
    p.sums = reducer.sums;
    p.gathers = reducer.gathers;
  };
  std::vector<std::thread> others;
  for (std::size_t k = 1; k < counts.size(); ++k) others.emplace_back(run, k);
  run(0);
  for (auto& t : others) t.join();
  return reps;
}

std::vector<float> joined(const std::vector<Replica>& reps, std::vector<float> Replica::*field) {
  std::vector<float> all;
  for (const auto& p : reps) all.insert(all.end(), (p.*field).begin(), (p.*field).end());
  return all;
}

TEST(SyncBatchNorm, TwoReplicasWithHalvesEqualOneWithTheWholeBatch) {
  const BnCase whole{6, 5, 3, 4};
  const std::int64_t split = 4;  // uneven halves: 4 and 2 samples, so the counts must travel too
  const std::int64_t sample = whole.c * whole.h * whole.w;
  BnFixture one(whole, 7);
  const auto r = random_vector(whole.numel(), 51);
  const auto y_one = one.layer.forward(one.xt).to_host();
  const auto dx_one = one.layer.backward(host_tensor(r, whole.shape()), GradMode::kOverwrite, true, {})->to_host();

  BnFixture init(whole, 7);  // the same parameters and running statistics as `one` started with
  const auto reps = run_replicas(whole, init, r, {split, whole.n - split});
  for (const auto& p : reps) {  // forward: one gather of (count, mean, M2); backward: one sum of the two gradient sums
    EXPECT_EQ(p.gathers, 1);
    EXPECT_EQ(p.sums, 1);
  }
  expect_close(joined(reps, &Replica::y), to_double(y_one), 1e-5, "y");
  expect_close(joined(reps, &Replica::dx), to_double(dx_one), 1e-5, "dx");
  for (int k = 0; k < 2; ++k) {
    expect_close(reps[k].rm, to_double(one.running_mean), 1e-6, "running_mean");
    expect_close(reps[k].rv, to_double(one.running_var), 1e-6, "running_var");
  }
  for (std::int64_t c = 0; c < whole.c; ++c) {  // local sums: the two replicas' add up to the whole batch's
    EXPECT_NEAR(reps[0].dgamma[c] + reps[1].dgamma[c], one.dgamma[c], 1e-5);
    EXPECT_NEAR(reps[0].dbeta[c] + reps[1].dbeta[c], one.dbeta[c], 1e-5);
  }

  // Without the reducer the halves differ from the whole: the check above is not vacuous.
  BnFixture half(BnCase{split, whole.c, whole.h, whole.w}, 7);
  half.x.assign(init.x.begin(), init.x.begin() + split * sample);
  half.xt.copy_from_host(half.x);
  const auto y_local = half.layer.forward(half.xt).to_host();
  double diff = 0;
  for (std::size_t i = 0; i < y_local.size(); ++i) diff = std::max(diff, std::abs(double(y_local[i]) - y_one[i]));
  EXPECT_GT(diff, 1e-2);
}

TEST(SyncBatchNorm, ThreeUnevenReplicasWithALargeMeanMatchTheReference) {
  // Mean 1000, spread 1e-2, and replicas whose means differ: combining their statistics must not cancel.
  // Checked against the plain double loops over the whole batch, not against the layer itself.
  const BnCase whole{6, 3, 5, 3};
  BnFixture init(whole, 9, 0.0f);
  for (std::size_t i = 0; i < init.x.size(); ++i)
    init.x[i] = 1000.0f + 0.01f * init.x[i] + (i < init.x.size() / 2 ? 0.004f : 0.0f);
  const auto r = random_vector(whole.numel(), 52);
  const auto reps = run_replicas(whole, init, r, {3, 1, 2});
  const auto xd = to_double(init.x);
  const BnStats s = batch_stats_ref(whole, xd);
  expect_close(joined(reps, &Replica::y),
               normalise_ref(whole, xd, s, to_double(init.gamma), to_double(init.beta), 1e-5), 1e-4, "y");
  const double m = static_cast<double>(whole.n * whole.h * whole.w), momentum = 0.1;
  std::vector<double> rm(whole.c), rv(whole.c);
  for (std::int64_t c = 0; c < whole.c; ++c) {
    rm[c] = (1 - momentum) * init.running_mean[c] + momentum * s.mean[c];
    rv[c] = (1 - momentum) * init.running_var[c] + momentum * s.var[c] * m / (m - 1);
  }
  for (const auto& p : reps) {
    expect_close(p.rm, rm, 1e-6, "running_mean");
    expect_close(p.rv, rv, 1e-6, "running_var");
    EXPECT_EQ(p.rm, reps[0].rm);  // every replica combined the same values in the same order
    EXPECT_EQ(p.rv, reps[0].rv);
  }
}

}  // namespace
}  // namespace mirror::nn
