// schedule.cc — mirror/nn/schedule.h: warmup + constant / cosine / step / milestone decay; linear scaling rule.
#include "mirror/nn/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "mirror/error.h"

namespace mirror::nn {

DecayKind parse_decay_kind(std::string_view name) {
  if (name == "constant") return DecayKind::kConstant;
  if (name == "cosine") return DecayKind::kCosine;
  if (name == "step") return DecayKind::kStep;
  if (name == "milestones") return DecayKind::kMilestones;
  MIRROR_THROW(kInvalidArgument,
               "learning-rate schedule '" << name << "' is not one of constant, cosine, step, milestones");
}

const char* to_string(DecayKind kind) {
  switch (kind) {
    case DecayKind::kConstant: return "constant";
    case DecayKind::kCosine: return "cosine";
    case DecayKind::kStep: return "step";
    case DecayKind::kMilestones: return "milestones";
  }
  return "?";
}

LrSchedule::LrSchedule(const ScheduleOptions& o) : options_(o) {
  MIRROR_CHECK(o.base_lr > 0.0f && std::isfinite(o.base_lr), kInvalidArgument,
               "learning rate must be > 0, got " << o.base_lr);
  MIRROR_CHECK(o.warmup_steps >= 0, kInvalidArgument, "warmup steps must be >= 0, got " << o.warmup_steps);
  if (o.decay == DecayKind::kCosine) {
    MIRROR_CHECK(o.total_steps > o.warmup_steps, kInvalidArgument,
                 "cosine schedule needs total steps (" << o.total_steps << ") > warmup steps (" << o.warmup_steps << ")");
    MIRROR_CHECK(o.min_lr >= 0.0f && o.min_lr <= o.base_lr, kInvalidArgument,
                 "min lr must be in [0, base lr " << o.base_lr << "], got " << o.min_lr);
  }
  if (o.decay == DecayKind::kStep) {
    MIRROR_CHECK(o.step_every > 0, kInvalidArgument, "step decay period must be > 0 steps, got " << o.step_every);
    MIRROR_CHECK(o.gamma > 0.0f && o.gamma <= 1.0f, kInvalidArgument, "step decay gamma must be in (0, 1], got " << o.gamma);
  }
  if (o.decay == DecayKind::kMilestones) {
    MIRROR_CHECK(!o.milestones.empty(), kInvalidArgument, "milestone schedule needs at least one milestone");
    for (std::size_t i = 0; i < o.milestones.size(); ++i)
      MIRROR_CHECK(o.milestones[i] > (i ? o.milestones[i - 1] : 0), kInvalidArgument,
                   "milestones must be > 0 and strictly ascending, got " << o.milestones[i] << " at position " << i);
    MIRROR_CHECK(o.gamma > 0.0f && o.gamma <= 1.0f, kInvalidArgument, "milestone gamma must be in (0, 1], got " << o.gamma);
  }
}

float LrSchedule::lr_at(std::int64_t step) const {
  const ScheduleOptions& o = options_;
  const double base = o.base_lr;
  if (step < 0) step = 0;
  if (step < o.warmup_steps)
    return static_cast<float>(base * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps));
  const std::int64_t s = step - o.warmup_steps;
  switch (o.decay) {
    case DecayKind::kConstant:
      return o.base_lr;
    case DecayKind::kCosine: {
      const double span = static_cast<double>(o.total_steps - o.warmup_steps);
      const double progress = std::min(static_cast<double>(s), span) / span;
      return static_cast<float>(o.min_lr + (base - o.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    }
    case DecayKind::kStep:
      return static_cast<float>(base * std::pow(static_cast<double>(o.gamma), static_cast<double>(s / o.step_every)));
    case DecayKind::kMilestones: {
      const auto passed = std::upper_bound(o.milestones.begin(), o.milestones.end(), step) - o.milestones.begin();
      return static_cast<float>(base * std::pow(static_cast<double>(o.gamma), static_cast<double>(passed)));
    }
  }
  return o.base_lr;
}

float scale_lr_linear(float lr, std::int64_t global_batch, std::int64_t reference_batch) {
  MIRROR_CHECK(global_batch > 0 && reference_batch > 0, kInvalidArgument,
               "linear lr scaling needs positive batch sizes, got global " << global_batch << ", reference "
                                                                          << reference_batch);
  return static_cast<float>(static_cast<double>(lr) * static_cast<double>(global_batch) /
                            static_cast<double>(reference_batch));
}

}  // namespace mirror::nn
