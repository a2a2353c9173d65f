// mirror/nn/optimizer.h — optimizers over the model's flat buffers: SGD (momentum, Nesterov, weight
// decay) and AdamW (decoupled weight decay), same update rules as PyTorch's. Their state lives in named
// flat device buffers with the parameters' layout ("momentum"; "exp_avg", "exp_avg_sq") plus a step
// counter, all copyable to and from the host for checkpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

enum class OptimizerKind { kSgd, kAdamW };

// "sgd" | "adamw" (kInvalidArgument otherwise, naming the string).
OptimizerKind parse_optimizer_kind(std::string_view name);
const char* to_string(OptimizerKind kind);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  float momentum = 0.9f;      // SGD; 0 = plain SGD (no state)
  bool nesterov = false;      // SGD; needs momentum > 0
  float weight_decay = 0.0f;  // SGD: L2 added to the gradient; AdamW: decoupled
  float beta1 = 0.9f;         // AdamW
  float beta2 = 0.999f;       // AdamW
  float eps = 1e-8f;          // AdamW
};

// Throws kInvalidArgument naming the field when a value is out of range (momentum, betas in [0,1), eps > 0,
// weight_decay >= 0, nesterov without momentum).
void validate(const OptimizerOptions& options);

class Optimizer {
 public:
  virtual ~Optimizer();
  // numel: size of the flat parameter/gradient buffers; state is allocated on `device` and zeroed.
  static std::unique_ptr<Optimizer> create(const OptimizerOptions& options, std::int64_t numel, Device device);

  // One update of params (device, numel) from grads with learning rate lr; increments step_count().
  void step(float* params, const float* grads, float lr);
  // The same update restricted to elements [r.begin, r.end) of each range: params, grads and state
  // outside them are not read or written. Increments step_count() once. The rules are elementwise, so
  // the ranks of a sharded step (each updating its own ranges of a partition of [0, numel)) compute
  // exactly the values one step() over everything would.
  struct Range {
    std::int64_t begin = 0, end = 0;
  };
  void step(float* params, const float* grads, float lr, std::span<const Range> ranges);
  // Elements that take no weight decay (the rest take options().weight_decay): sorted, disjoint ranges
  // within [0, numel) (kInvalidArgument otherwise), e.g. weight_decay.h's decay_exempt_ranges. Elementwise
  // like the rules, so a sharded step still equals the whole one bit for bit. Default: none.
  void set_decay_exempt(std::vector<Range> ranges);
  const std::vector<Range>& decay_exempt() const { return exempt_; }

  const OptimizerOptions& options() const { return options_; }
  std::int64_t numel() const { return numel_; }
  // Optimizer steps taken (AdamW's bias correction uses it).
  std::int64_t step_count() const { return steps_; }
  void set_step_count(std::int64_t steps);

  // Names of the state buffers, each numel() floats: {"momentum"} (SGD with momentum), {} (plain SGD),
  // {"exp_avg", "exp_avg_sq"} (AdamW).
  std::vector<std::string> state_names() const;
  std::vector<float> state_to_host(std::string_view name) const;
  void state_from_host(std::string_view name, std::span<const float> host);  // exactly numel() values
  // Zeroes the state and the step counter.
  void reset();
  // State buffer i (device memory, numel() floats; i < state_names().size()), e.g. to all-gather it.
  float* state_data(std::size_t i) { return states_.at(i).data(); }

 protected:
  Optimizer(const OptimizerOptions& options, std::int64_t numel, Device device, std::vector<std::string> names);
  float* state(std::size_t i) { return states_[i].data(); }
  // The rule over elements [begin, end), for step count steps_ + 1, with this weight decay.
  virtual void update(float* params, const float* grads, float lr, float weight_decay, std::int64_t begin,
                      std::int64_t end) = 0;

  OptimizerOptions options_;
  std::int64_t numel_;
  Device device_;
  std::int64_t steps_ = 0;

 private:
  const Tensor& find(std::string_view name) const;
  void update_range(float* params, const float* grads, float lr, std::int64_t begin, std::int64_t end);
  std::vector<std::string> names_;
  std::vector<Range> exempt_;
  std::vector<Tensor> states_;
};

}  // namespace mirror::nn
