// mirror/nn/loss.h — softmax cross-entropy over logits whose last axis is the classes ([N, C] per sample,
// [N, T, C] per token: any rank) and integer targets shaped like the logits without the class axis ([N], [N, T]):
// the mean loss, and sums (loss, correct predictions, count) that evaluation adds up over batches and ranks.
// dlogits = (softmax - onehot) / count, so that the average over N ranks of batch B equals the gradient
// of one rank with batch N·B. An optional ignore index (PyTorch's ignore_index) leaves targets out: no loss, no
// gradient, not counted.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

struct LossStats {
  double loss_sum = 0;      // sum over counted targets of -log softmax(z)[target]
  std::int64_t correct = 0;  // counted targets whose row's first arg-max is the target
  std::int64_t count = 0;    // targets counted (all but the ignored ones)

  double mean_loss() const { return count ? loss_sum / count : 0.0; }
  double accuracy() const { return count ? static_cast<double>(correct) / count : 0.0; }
  LossStats& operator+=(const LossStats& o) {
    loss_sum += o.loss_sum; correct += o.correct; count += o.count;
    return *this;
  }
};

// Holds per-batch scratch (targets and per-row results on the device), grown on first use and reused.
class SoftmaxCrossEntropy {
 public:
  // ignore_index: a target value that is left out (none by default).
  explicit SoftmaxCrossEntropy(Device device, std::optional<std::int32_t> ignore_index = std::nullopt);

  // Loss and accuracy only. targets (host): one per row of the logits (a row: the classes of one sample or
  // token), each in [0, classes) or the ignore index, else kInvalidArgument naming the row, the target and
  // the class count.
  LossStats forward(const Tensor& logits, std::span<const std::int32_t> targets);
  // Also writes dlogits (resized to the logits' shape) = (softmax - onehot) / grad_divisor, where
  // grad_divisor 0 means the count of targets not ignored; an ignored target's row of dlogits is 0.
  LossStats forward_backward(const Tensor& logits, std::span<const std::int32_t> targets, Tensor& dlogits,
                             std::int64_t grad_divisor = 0);
  // The same with targets as an int32 host tensor shaped like the logits without their class axis (else
  // kInvalidArgument naming both shapes).
  LossStats forward(const Tensor& logits, const Tensor& targets);
  LossStats forward_backward(const Tensor& logits, const Tensor& targets, Tensor& dlogits,
                             std::int64_t grad_divisor = 0);

 private:
  LossStats run(const Tensor& logits, std::span<const std::int32_t> targets, Tensor* dlogits, std::int64_t divisor);
  // Checks every target; returns how many are ignored (their kernel label then 0, in safe_targets_).
  std::int64_t check_targets(std::span<const std::int32_t> targets, std::int64_t classes);
  std::span<const std::int32_t> targets_of(const Tensor& logits, const Tensor& targets) const;
  bool ignored(std::int32_t target) const { return ignore_index_ && target == *ignore_index_; }
  Device device_;
  std::optional<std::int32_t> ignore_index_;
  DeviceBuffer labels_, row_loss_, row_correct_;
  std::vector<std::int32_t> safe_targets_;
  std::vector<float> host_loss_;
  std::vector<std::int32_t> host_correct_;
};

}  // namespace mirror::nn
