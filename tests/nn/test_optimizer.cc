// test_optimizer.cc — SGD (plain, momentum, Nesterov, weight decay) and AdamW against serial double-precision
// updates written from the published formulas, over several steps with changing gradients and lr; state
// save/load continues bit-exactly; a step over a partition of ranges equals one over everything; option
// checks.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/optimizer.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;
constexpr std::int64_t kN = 23;
constexpr int kSteps = 5;

std::vector<float> grads_at(int step) { return random_vector(kN, 100 + step, -2.0f, 2.0f); }
float lr_at(int step) { return 0.1f / (1 + step); }

// Runs the optimizer kSteps from p0 and returns the parameters.
std::vector<float> run(Optimizer& opt, std::vector<float> p) {
  for (int s = 0; s < kSteps; ++s) {
    const auto g = grads_at(s);
    opt.step(p.data(), g.data(), lr_at(s));
  }
  return p;
}

struct SgdCase {
  float momentum, wd;
  bool nesterov;
};

class SgdTest : public ::testing::TestWithParam<SgdCase> {};

TEST_P(SgdTest, MatchesSerialReference) {
  const auto c = GetParam();
  const auto p0 = random_vector(kN, 1);
  auto opt = Optimizer::create({.kind = OptimizerKind::kSgd, .momentum = c.momentum, .nesterov = c.nesterov,
                                .weight_decay = c.wd},
                               kN, Device{});
  const auto got = run(*opt, p0);
  EXPECT_EQ(opt->step_count(), kSteps);

  // Reference (Sutskever / PyTorch form): d = g + wd p; b = mu b + d (b starts at 0); step = nesterov ? d + mu b : b.
  std::vector<double> p(p0.begin(), p0.end()), b(kN, 0.0);
  for (int s = 0; s < kSteps; ++s) {
    const auto g = grads_at(s);
    for (std::int64_t i = 0; i < kN; ++i) {
      const double d = g[i] + c.wd * p[i];
      double step = d;
      if (c.momentum > 0) {
        b[i] = c.momentum * b[i] + d;
        step = c.nesterov ? d + c.momentum * b[i] : b[i];
      }
      p[i] -= static_cast<double>(lr_at(s)) * step;
    }
  }
  for (std::int64_t i = 0; i < kN; ++i) ASSERT_NEAR(got[i], p[i], 1e-5) << i;  // ~10 float ops on O(1) values
  if (c.momentum > 0) {
    const auto buf = opt->state_to_host("momentum");
    for (std::int64_t i = 0; i < kN; ++i) ASSERT_NEAR(buf[i], b[i], 1e-5) << i;
  } else {
    EXPECT_TRUE(opt->state_names().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SgdTest,
                         ::testing::Values(SgdCase{0.0f, 0.0f, false}, SgdCase{0.0f, 0.01f, false},
                                           SgdCase{0.9f, 0.0f, false}, SgdCase{0.9f, 5e-4f, false},
                                           SgdCase{0.9f, 5e-4f, true}));

TEST(AdamW, MatchesSerialReference) {
  const float b1 = 0.9f, b2 = 0.99f, eps = 1e-6f, wd = 0.05f;
  const auto p0 = random_vector(kN, 2);
  auto opt = Optimizer::create({.kind = OptimizerKind::kAdamW, .weight_decay = wd, .beta1 = b1, .beta2 = b2, .eps = eps},
                               kN, Device{});
  const auto got = run(*opt, p0);
  // Loshchilov & Hutter: p -= lr wd p; m, v moments; p -= lr m̂ / (sqrt(v̂) + eps), hats = bias-corrected.
  std::vector<double> p(p0.begin(), p0.end()), m(kN, 0.0), v(kN, 0.0);
  for (int s = 0; s < kSteps; ++s) {
    const auto g = grads_at(s);
    const double lr = lr_at(s), t = s + 1;
    for (std::int64_t i = 0; i < kN; ++i) {
      p[i] -= lr * wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * static_cast<double>(g[i]) * g[i];
      const double mhat = m[i] / (1 - std::pow(static_cast<double>(b1), t));
      const double vhat = v[i] / (1 - std::pow(static_cast<double>(b2), t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
  for (std::int64_t i = 0; i < kN; ++i) ASSERT_NEAR(got[i], p[i], 1e-5) << i;
  const auto em = opt->state_to_host("exp_avg"), ev = opt->state_to_host("exp_avg_sq");
  for (std::int64_t i = 0; i < kN; ++i) {
    ASSERT_NEAR(em[i], m[i], 1e-6);
    ASSERT_NEAR(ev[i], v[i], 1e-6);
  }
  EXPECT_EQ(opt->state_names(), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
}

TEST(Optimizer, StateSaveLoadContinuesExactly) {
  for (auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdamW}) {
    const OptimizerOptions o{.kind = kind, .momentum = 0.9f, .nesterov = true, .weight_decay = 1e-3f};
    auto straight = Optimizer::create(o, kN, Device{});
    auto p = random_vector(kN, 3);
    auto q = p;
    for (int s = 0; s < kSteps; ++s) straight->step(p.data(), grads_at(s).data(), lr_at(s));

    auto first = Optimizer::create(o, kN, Device{});
    for (int s = 0; s < 2; ++s) first->step(q.data(), grads_at(s).data(), lr_at(s));
    auto second = Optimizer::create(o, kN, Device{});
    for (const auto& name : first->state_names()) second->state_from_host(name, first->state_to_host(name));
    second->set_step_count(first->step_count());
    for (int s = 2; s < kSteps; ++s) second->step(q.data(), grads_at(s).data(), lr_at(s));
    EXPECT_EQ(p, q) << to_string(kind);  // bit-exact: same operations on the same values
  }
}

// What each rank of a sharded step does: updating a partition of [0, n) range by range (odd sizes, so the
// vectorised loops split differently) gives bit for bit what one step over everything gives, parameters
// and state, for SGD (momentum, Nesterov, weight decay) and AdamW; a step over a range leaves everything
// outside it alone; a range outside [0, n) is refused.
TEST(Optimizer, StepOverAPartitionOfRangesEqualsOneStep) {
  const std::vector<OptimizerOptions> kinds = {
      {.kind = OptimizerKind::kSgd, .momentum = 0.9f, .nesterov = true, .weight_decay = 0.01f},
      {.kind = OptimizerKind::kAdamW, .weight_decay = 0.01f}};
  const std::vector<Optimizer::Range> partition = {{0, 7}, {7, 8}, {8, 19}, {19, kN}};
  for (const OptimizerOptions& o : kinds) {
    SCOPED_TRACE(to_string(o.kind));
    auto whole = Optimizer::create(o, kN, Device{});
    auto pieces = Optimizer::create(o, kN, Device{});
    auto p = random_vector(kN, 1), q = p;
    for (int s = 0; s < kSteps; ++s) {
      const auto g = grads_at(s);
      whole->step(p.data(), g.data(), lr_at(s));
      pieces->step(q.data(), g.data(), lr_at(s), partition);
    }
    EXPECT_EQ(pieces->step_count(), kSteps);
    for (std::int64_t i = 0; i < kN; ++i) ASSERT_EQ(p[i], q[i]) << "parameter " << i;
    for (const std::string& name : whole->state_names()) EXPECT_EQ(whole->state_to_host(name), pieces->state_to_host(name));

    // One range only: the rest of the parameters and state stay as they were.
    auto r = random_vector(kN, 2);
    const auto before = r;
    const auto g = grads_at(0);
    auto part = Optimizer::create(o, kN, Device{});
    const std::vector<Optimizer::Range> middle = {{5, 9}};
    part->step(r.data(), g.data(), 0.1f, middle);
    const auto state = part->state_to_host(part->state_names()[0]);
    for (std::int64_t i = 0; i < kN; ++i) {
      const bool inside = i >= 5 && i < 9;
      EXPECT_EQ(r[i] != before[i], inside) << "parameter " << i;
      EXPECT_EQ(state[i] != 0.0f, inside) << "state " << i;
    }
    const std::vector<Optimizer::Range> outside = {{20, kN + 1}};
    EXPECT_THROW(part->step(r.data(), g.data(), 0.1f, outside), Error);
  }
}

// Weight decay skips the exempt ranges: against the serial references above with weight decay 0 inside
// them, for SGD (momentum, Nesterov) and AdamW; a sharded step (a partition whose cuts fall inside, at and
// across the exempt ranges) still equals the whole step bit for bit; bad exemptions are refused.
TEST(Optimizer, ExemptRangesTakeNoWeightDecay) {
  const std::vector<Optimizer::Range> exempt = {{3, 7}, {12, 13}, {15, kN}};
  auto exempt_at = [&](std::int64_t i) {
    for (const auto& r : exempt)
      if (i >= r.begin && i < r.end) return true;
    return false;
  };
  const float wd = 0.05f, mu = 0.9f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  for (const auto kind : {OptimizerKind::kSgd, OptimizerKind::kAdamW}) {
    SCOPED_TRACE(to_string(kind));
    const OptimizerOptions o{.kind = kind, .momentum = mu, .nesterov = true, .weight_decay = wd,
                             .beta1 = b1, .beta2 = b2, .eps = eps};
    auto opt = Optimizer::create(o, kN, Device{});
    opt->set_decay_exempt(exempt);
    const auto p0 = random_vector(kN, 7);
    const auto got = run(*opt, p0);
    std::vector<double> p(p0.begin(), p0.end()), b(kN, 0.0), v(kN, 0.0);
    for (int s = 0; s < kSteps; ++s) {
      const auto g = grads_at(s);
      const double lr = lr_at(s), t = s + 1;
      for (std::int64_t i = 0; i < kN; ++i) {
        const double w = exempt_at(i) ? 0.0 : wd;
        if (kind == OptimizerKind::kSgd) {  // d = g + w p; b = mu b + d; step = d + mu b (Nesterov)
          const double d = g[i] + w * p[i];
          b[i] = mu * b[i] + d;
          p[i] -= lr * (d + mu * b[i]);
        } else {  // p -= lr w p, then Adam with bias correction (b: first moment, v: second)
          p[i] -= lr * w * p[i];
          b[i] = b1 * b[i] + (1 - b1) * g[i];
          v[i] = b2 * v[i] + (1 - b2) * static_cast<double>(g[i]) * g[i];
          const double mhat = b[i] / (1 - std::pow(static_cast<double>(b1), t));
          const double vhat = v[i] / (1 - std::pow(static_cast<double>(b2), t));
          p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
        }
      }
    }
    for (std::int64_t i = 0; i < kN; ++i) ASSERT_NEAR(got[i], p[i], 1e-5) << i;
    // The exemption matters at this size: with decay everywhere the exempt elements end elsewhere.
    auto all = Optimizer::create(o, kN, Device{});
    const auto decayed = run(*all, p0);
    double moved = 0;
    for (std::int64_t i = 0; i < kN; ++i) moved = std::max(moved, exempt_at(i) ? std::abs(decayed[i] - got[i]) : 0.0);
    EXPECT_GT(moved, 1e-4);

    const std::vector<Optimizer::Range> partition = {{0, 2}, {2, 5}, {5, 12}, {12, 13}, {13, 16}, {16, kN}};
    auto pieces = Optimizer::create(o, kN, Device{});
    pieces->set_decay_exempt(exempt);
    auto q = p0;
    for (int s = 0; s < kSteps; ++s) pieces->step(q.data(), grads_at(s).data(), lr_at(s), partition);
    for (std::int64_t i = 0; i < kN; ++i) ASSERT_EQ(q[i], got[i]) << "parameter " << i;
    for (const std::string& name : opt->state_names()) EXPECT_EQ(opt->state_to_host(name), pieces->state_to_host(name));
  }
  auto opt = Optimizer::create({.weight_decay = 0.01f}, kN, Device{});
  EXPECT_THROW(opt->set_decay_exempt({{5, 9}, {8, 10}}), Error);   // overlapping
  EXPECT_THROW(opt->set_decay_exempt({{9, 12}, {2, 4}}), Error);   // unsorted
  EXPECT_THROW(opt->set_decay_exempt({{20, kN + 1}}), Error);      // past the end
  EXPECT_THROW(opt->set_decay_exempt({{4, 4}}), Error);            // empty
}

TEST(Optimizer, OptionsAndStateNamesAreChecked) {
  EXPECT_THROW(Optimizer::create({.momentum = 0.0f, .nesterov = true}, kN, Device{}), Error);
  EXPECT_THROW(Optimizer::create({.momentum = 1.0f}, kN, Device{}), Error);
  EXPECT_THROW(Optimizer::create({.weight_decay = -1.0f}, kN, Device{}), Error);
  EXPECT_THROW(Optimizer::create({.kind = OptimizerKind::kAdamW, .beta2 = 1.0f}, kN, Device{}), Error);
  EXPECT_THROW(Optimizer::create({.kind = OptimizerKind::kAdamW, .eps = 0.0f}, kN, Device{}), Error);
  auto opt = Optimizer::create({}, kN, Device{});
  EXPECT_THROW(opt->state_to_host("exp_avg"), Error);
  EXPECT_THROW(opt->state_from_host("momentum", std::vector<float>(kN - 1)), Error);
  EXPECT_EQ(parse_optimizer_kind("adamw"), OptimizerKind::kAdamW);
  EXPECT_THROW(parse_optimizer_kind("adam"), Error);
}

}  // namespace
}  // namespace mirror::nn
