// optimizer.cc — mirror/nn/optimizer.h: options, the state buffers and their host copies, and the two
// update rules (SGD and AdamW) as thin classes over ops::sgd_update / ops::adamw_update.
#include "mirror/nn/optimizer.h"

#include <algorithm>
#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {

OptimizerKind parse_optimizer_kind(std::string_view name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adamw") return OptimizerKind::kAdamW;
  MIRROR_THROW(kInvalidArgument, "optimizer '" << name << "' is not one of sgd, adamw");
}

const char* to_string(OptimizerKind kind) { return kind == OptimizerKind::kSgd ? "sgd" : "adamw"; }

void validate(const OptimizerOptions& o) {
  MIRROR_CHECK(o.momentum >= 0.0f && o.momentum < 1.0f, kInvalidArgument,
               "momentum must be in [0, 1), got " << o.momentum);
  MIRROR_CHECK(!o.nesterov || o.momentum > 0.0f, kInvalidArgument, "Nesterov momentum needs momentum > 0");
  MIRROR_CHECK(o.weight_decay >= 0.0f && std::isfinite(o.weight_decay), kInvalidArgument,
               "weight decay must be >= 0, got " << o.weight_decay);
  MIRROR_CHECK(o.beta1 >= 0.0f && o.beta1 < 1.0f, kInvalidArgument, "beta1 must be in [0, 1), got " << o.beta1);
  MIRROR_CHECK(o.beta2 >= 0.0f && o.beta2 < 1.0f, kInvalidArgument, "beta2 must be in [0, 1), got " << o.beta2);
  MIRROR_CHECK(o.eps > 0.0f, kInvalidArgument, "eps must be > 0, got " << o.eps);
}

namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimizerOptions& o, std::int64_t numel, Device device)
      : Optimizer(o, numel, device, o.momentum > 0.0f ? std::vector<std::string>{"momentum"}
                                                      : std::vector<std::string>{}) {}
  void update(float* params, const float* grads, float lr, float weight_decay, std::int64_t begin,
              std::int64_t end) override {
    float* buf = options_.momentum > 0.0f ? state(0) + begin : nullptr;
    ops::sgd_update(device_, end - begin, params + begin, grads + begin, buf, lr, options_.momentum, weight_decay,
                    options_.nesterov);
  }
};

class AdamW final : public Optimizer {
 public:
  AdamW(const OptimizerOptions& o, std::int64_t numel, Device device)
      : Optimizer(o, numel, device, {"exp_avg", "exp_avg_sq"}) {}
  void update(float* params, const float* grads, float lr, float weight_decay, std::int64_t begin,
              std::int64_t end) override {
    const double t = static_cast<double>(steps_ + 1);
    const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta1), t));
    const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta2), t));
    ops::adamw_update(device_, end - begin, params + begin, grads + begin, state(0) + begin, state(1) + begin, lr,
                      options_.beta1, options_.beta2, options_.eps, weight_decay, bc1, bc2);
  }
};

}  // namespace

Optimizer::Optimizer(const OptimizerOptions& options, std::int64_t numel, Device device,
                     std::vector<std::string> names)
    : options_(options), numel_(numel), device_(device), names_(std::move(names)) {
  MIRROR_CHECK(numel >= 0, kInvalidArgument, "optimizer over " << numel << " parameters");
  for (std::size_t i = 0; i < names_.size(); ++i) states_.emplace_back(Shape{numel}, device);
  reset();
}

Optimizer::~Optimizer() = default;

std::unique_ptr<Optimizer> Optimizer::create(const OptimizerOptions& options, std::int64_t numel, Device device) {
  validate(options);
  if (options.kind == OptimizerKind::kSgd) return std::make_unique<Sgd>(options, numel, device);
  return std::make_unique<AdamW>(options, numel, device);
}

void Optimizer::step(float* params, const float* grads, float lr) {
  const Range all{0, numel_};
  step(params, grads, lr, std::span<const Range>(&all, 1));
}

void Optimizer::step(float* params, const float* grads, float lr, std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    MIRROR_CHECK(r.begin >= 0 && r.begin <= r.end && r.end <= numel_, kInvalidArgument,
                 "optimizer range [" << r.begin << ", " << r.end << ") is not within [0, " << numel_ << ")");
    if (r.end > r.begin) update_range(params, grads, lr, r.begin, r.end);
  }
  ++steps_;
}

// [begin, end) in pieces: the parts inside an exempt range without weight decay, the rest with it.
void Optimizer::update_range(float* params, const float* grads, float lr, std::int64_t begin, std::int64_t end) {
  const float decay = options_.weight_decay;
  if (decay == 0.0f || exempt_.empty()) return update(params, grads, lr, decay, begin, end);
  std::int64_t at = begin;
  for (const Range& x : exempt_) {
    if (x.end <= at) continue;
    if (x.begin >= end) break;
    if (x.begin > at) update(params, grads, lr, decay, at, x.begin);
    const std::int64_t stop = std::min(x.end, end);
    update(params, grads, lr, 0.0f, std::max(at, x.begin), stop);
    at = stop;
  }
  if (at < end) update(params, grads, lr, decay, at, end);
}

void Optimizer::set_decay_exempt(std::vector<Range> ranges) {
  std::int64_t last_end = 0;
  for (const Range& r : ranges) {
    MIRROR_CHECK(r.begin >= last_end && r.begin < r.end && r.end <= numel_, kInvalidArgument,
                 "weight-decay exemption [" << r.begin << ", " << r.end << ") is empty, out of [0, " << numel_
                                            << ") or not after the previous one (ending at " << last_end << ")");
    last_end = r.end;
  }
  exempt_ = std::move(ranges);
}

void Optimizer::set_step_count(std::int64_t steps) {
  MIRROR_CHECK(steps >= 0, kInvalidArgument, "optimizer step count must be >= 0, got " << steps);
  steps_ = steps;
}

std::vector<std::string> Optimizer::state_names() const { return names_; }

const Tensor& Optimizer::find(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return states_[i];
  std::string known;
  for (const auto& n : names_) known += (known.empty() ? "" : ", ") + n;
  MIRROR_THROW(kInvalidArgument, to_string(options_.kind) << " optimizer has no state '" << name << "' (it has: "
                                                          << (known.empty() ? "none" : known) << ")");
}

std::vector<float> Optimizer::state_to_host(std::string_view name) const { return find(name).to_host(); }

void Optimizer::state_from_host(std::string_view name, std::span<const float> host) {
  const_cast<Tensor&>(find(name)).copy_from_host(host);
}

void Optimizer::reset() {
  for (auto& s : states_) ops::fill(device_, s.data(), s.numel(), 0.0f);
  steps_ = 0;
}

}  // namespace mirror::nn
