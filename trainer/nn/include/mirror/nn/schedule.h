// mirror/nn/schedule.h — learning rate as a function of the optimizer step: linear warmup from
// base_lr/warmup to base_lr over warmup_steps, then constant, cosine (to min_lr at total_steps) or step
// decay (× gamma every step_every steps), or piecewise constant (× gamma at each milestone step: the
// trainer's --lr-milestones in epochs); and the linear scaling rule (Goyal et al. 2017).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace mirror::nn {

enum class DecayKind { kConstant, kCosine, kStep, kMilestones };

// "constant" | "cosine" | "step" | "milestones" (kInvalidArgument otherwise, naming the string).
DecayKind parse_decay_kind(std::string_view name);
const char* to_string(DecayKind kind);

struct ScheduleOptions {
  float base_lr = 0.1f;
  std::int64_t warmup_steps = 0;
  DecayKind decay = DecayKind::kConstant;
  std::int64_t total_steps = 0;  // cosine: lr reaches min_lr at this step (and stays there)
  float min_lr = 0.0f;           // cosine
  std::int64_t step_every = 0;   // step decay: period in steps (> 0)
  float gamma = 0.1f;            // step and milestone decay factor
  std::vector<std::int64_t> milestones;  // milestones: steps (ascending, > 0) from which lr is × gamma more
};

class LrSchedule {
 public:
  // Validates (kInvalidArgument naming the field): base_lr > 0, warmup >= 0, cosine: total_steps > warmup
  // and 0 <= min_lr <= base_lr; step: step_every > 0, gamma in (0, 1].
  explicit LrSchedule(const ScheduleOptions& options);

  // lr for the update at 0-based step `step` (the number of optimizer steps already taken):
  //   step < warmup:  base_lr * (step + 1) / warmup
  //   then, with s = step - warmup:
  //   constant: base_lr
  //   cosine:   min_lr + (base_lr - min_lr) * (1 + cos(pi * min(s, T) / T)) / 2,  T = total_steps - warmup
  //   step:     base_lr * gamma ^ floor(s / step_every)
  //   milestones: base_lr * gamma ^ k, k = the number of milestones <= step (the step itself, not s)
  float lr_at(std::int64_t step) const;
  const ScheduleOptions& options() const { return options_; }

 private:
  ScheduleOptions options_;
};

// Linear scaling rule: lr * global_batch / reference_batch (both > 0, else kInvalidArgument).
float scale_lr_linear(float lr, std::int64_t global_batch, std::int64_t reference_batch);

}  // namespace mirror::nn
