// test_schedule.cc — learning-rate values at known steps, worked out by hand from the formulas in
// schedule.h, and the linear scaling rule.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "mirror/error.h"
#include "mirror/nn/schedule.h"

namespace mirror::nn {
namespace {

TEST(Schedule, ConstantWithWarmup) {
  LrSchedule s({.base_lr = 0.4f, .warmup_steps = 4});
  EXPECT_FLOAT_EQ(s.lr_at(0), 0.1f);  // 0.4 * 1/4
  EXPECT_FLOAT_EQ(s.lr_at(1), 0.2f);
  EXPECT_FLOAT_EQ(s.lr_at(3), 0.4f);
  EXPECT_FLOAT_EQ(s.lr_at(4), 0.4f);
  EXPECT_FLOAT_EQ(s.lr_at(1000), 0.4f);
}

TEST(Schedule, NoWarmupStartsAtBase) {
  LrSchedule s({.base_lr = 0.05f});
  EXPECT_FLOAT_EQ(s.lr_at(0), 0.05f);
}

TEST(Schedule, CosineHitsKnownPoints) {
  // warmup 10, total 110 -> T = 100 decay steps from 1.0 to 0.0.
  LrSchedule s({.base_lr = 1.0f, .warmup_steps = 10, .decay = DecayKind::kCosine, .total_steps = 110, .min_lr = 0.0f});
  EXPECT_FLOAT_EQ(s.lr_at(4), 0.5f);      // warmup 5/10
  EXPECT_FLOAT_EQ(s.lr_at(10), 1.0f);     // cos(0)
  EXPECT_FLOAT_EQ(s.lr_at(35), 0.8535534f);  // (1 + cos(pi/4)) / 2 = (1 + 0.70710678) / 2
  EXPECT_NEAR(s.lr_at(60), 0.5f, 1e-7);   // halfway: (1 + cos(pi/2)) / 2
  EXPECT_NEAR(s.lr_at(85), 0.1464466f, 1e-7);  // (1 - 0.70710678) / 2
  EXPECT_NEAR(s.lr_at(110), 0.0f, 1e-7);
  EXPECT_NEAR(s.lr_at(500), 0.0f, 1e-7);  // stays at min after total
  LrSchedule m({.base_lr = 1.0f, .decay = DecayKind::kCosine, .total_steps = 100, .min_lr = 0.2f});
  EXPECT_NEAR(m.lr_at(50), 0.6f, 1e-7);   // 0.2 + 0.8 * 0.5
  EXPECT_NEAR(m.lr_at(100), 0.2f, 1e-7);
}

TEST(Schedule, StepDecay) {
  LrSchedule s({.base_lr = 0.8f, .warmup_steps = 2, .decay = DecayKind::kStep, .step_every = 3, .gamma = 0.5f});
  EXPECT_FLOAT_EQ(s.lr_at(0), 0.4f);
  EXPECT_FLOAT_EQ(s.lr_at(2), 0.8f);  // s = 0
  EXPECT_FLOAT_EQ(s.lr_at(4), 0.8f);  // s = 2
  EXPECT_FLOAT_EQ(s.lr_at(5), 0.4f);  // s = 3
  EXPECT_FLOAT_EQ(s.lr_at(8), 0.2f);  // s = 6
  EXPECT_FLOAT_EQ(s.lr_at(11), 0.1f);
}

// The Keras tutorial's schedule (1e-3, then 1e-4 from epoch 3, 1e-5 from epoch 7) at 5 steps per epoch,
// against the plain formula lr * gamma^(number of milestones passed), counted with a loop.
TEST(Schedule, MilestonesArePiecewiseConstant) {
  const std::vector<std::int64_t> milestones{15, 35};
  LrSchedule s({.base_lr = 1e-3f, .decay = DecayKind::kMilestones, .gamma = 0.1f, .milestones = milestones});
  for (std::int64_t step = 0; step < 60; ++step) {
    int k = 0;
    for (std::int64_t m : milestones) k += step >= m;
    EXPECT_FLOAT_EQ(s.lr_at(step), static_cast<float>(1e-3 * std::pow(0.1, k))) << "step " << step;
  }
  EXPECT_FLOAT_EQ(s.lr_at(14), 1e-3f);
  EXPECT_FLOAT_EQ(s.lr_at(15), 1e-4f);
  EXPECT_FLOAT_EQ(s.lr_at(35), 1e-5f);
  // With warmup, the milestones still count absolute steps.
  LrSchedule w({.base_lr = 1.0f, .warmup_steps = 4, .decay = DecayKind::kMilestones, .gamma = 0.5f, .milestones = {6}});
  EXPECT_FLOAT_EQ(w.lr_at(1), 0.5f);
  EXPECT_FLOAT_EQ(w.lr_at(5), 1.0f);
  EXPECT_FLOAT_EQ(w.lr_at(6), 0.5f);
  EXPECT_THROW(LrSchedule({.base_lr = 0.1f, .decay = DecayKind::kMilestones, .milestones = {5, 5}}), Error);
  EXPECT_THROW(LrSchedule({.base_lr = 0.1f, .decay = DecayKind::kMilestones, .milestones = {0}}), Error);
  EXPECT_THROW(LrSchedule({.base_lr = 0.1f, .decay = DecayKind::kMilestones}), Error);
}

TEST(Schedule, BadOptionsNameTheField) {
  EXPECT_THROW(LrSchedule({.base_lr = -0.1f}), Error);
  EXPECT_THROW(LrSchedule({.base_lr = 0.1f, .warmup_steps = -1}), Error);
  EXPECT_THROW(LrSchedule({.base_lr = 0.1f, .warmup_steps = 10, .decay = DecayKind::kCosine, .total_steps = 10}), Error);
  EXPECT_THROW(LrSchedule({.base_lr = 0.1f, .decay = DecayKind::kStep, .step_every = 0}), Error);
  try {
    LrSchedule({.base_lr = 0.1f, .decay = DecayKind::kStep, .step_every = 5, .gamma = 1.5f});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("gamma"), std::string::npos);
  }
}

TEST(Schedule, ParseNames) {
  EXPECT_EQ(parse_decay_kind("cosine"), DecayKind::kCosine);
  EXPECT_EQ(parse_decay_kind("step"), DecayKind::kStep);
  EXPECT_EQ(parse_decay_kind("constant"), DecayKind::kConstant);
  EXPECT_THROW(parse_decay_kind("linear"), Error);
  EXPECT_STREQ(to_string(DecayKind::kCosine), "cosine");
}

TEST(Schedule, LinearScalingRule) {
  EXPECT_FLOAT_EQ(scale_lr_linear(0.1f, 1024, 256), 0.4f);
  EXPECT_FLOAT_EQ(scale_lr_linear(0.1f, 128, 256), 0.05f);
  EXPECT_THROW(scale_lr_linear(0.1f, 0, 256), Error);
  EXPECT_THROW(scale_lr_linear(0.1f, 64, 0), Error);
}

}  // namespace
}  // namespace mirror::nn
