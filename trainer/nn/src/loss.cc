// loss.cc — mirror/nn/loss.h: target checks on the host, the softmax cross-entropy kernel on the device over
// the logits as rows of classes, ignored targets' rows cleared, per-row results copied back and summed in double.
#include "mirror/nn/loss.h"

#include "mirror/error.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(Device device, std::optional<std::int32_t> ignore_index)
    : device_(device), ignore_index_(ignore_index), labels_(device, 0), row_loss_(device, 0), row_correct_(device, 0) {}

LossStats SoftmaxCrossEntropy::forward(const Tensor& logits, std::span<const std::int32_t> targets) {
  return run(logits, targets, nullptr, 0);
}

LossStats SoftmaxCrossEntropy::forward_backward(const Tensor& logits, std::span<const std::int32_t> targets,
                                                Tensor& dlogits, std::int64_t grad_divisor) {
  return run(logits, targets, &dlogits, grad_divisor);
}

LossStats SoftmaxCrossEntropy::forward(const Tensor& logits, const Tensor& targets) {
  return run(logits, targets_of(logits, targets), nullptr, 0);
}

LossStats SoftmaxCrossEntropy::forward_backward(const Tensor& logits, const Tensor& targets, Tensor& dlogits,
                                                std::int64_t grad_divisor) {
  return run(logits, targets_of(logits, targets), &dlogits, grad_divisor);
}

std::span<const std::int32_t> SoftmaxCrossEntropy::targets_of(const Tensor& logits, const Tensor& targets) const {
  const Shape want(logits.shape().begin(), logits.shape().end() - (logits.shape().empty() ? 0 : 1));
  MIRROR_CHECK(targets.shape() == want, kInvalidArgument,
               "softmax cross-entropy: targets of shape " << to_string(targets.shape()) << " do not fit logits of shape "
                                                          << to_string(logits.shape()) << "; expected " << to_string(want));
  MIRROR_CHECK(targets.device().is_cpu(), kInvalidArgument,
               "softmax cross-entropy takes its targets in host memory, got them on " << to_string(targets.device()));
  return {targets.as<std::int32_t>(), static_cast<std::size_t>(targets.numel())};
}

std::int64_t SoftmaxCrossEntropy::check_targets(std::span<const std::int32_t> targets, std::int64_t classes) {
  std::int64_t ignored_count = 0;
  for (std::size_t r = 0; r < targets.size(); ++r) {
    if (ignored(targets[r])) {
      ++ignored_count;
      continue;
    }
    MIRROR_CHECK(targets[r] >= 0 && targets[r] < classes, kInvalidArgument,
                 "label " << targets[r] << " of row " << r << " in the batch is outside [0, " << classes << ")"
                          << (ignore_index_ ? " (and is not the ignore index " + std::to_string(*ignore_index_) + ")" : ""));
  }
  if (ignored_count > 0) {
    safe_targets_.assign(targets.begin(), targets.end());
    for (std::int32_t& t : safe_targets_)
      if (ignored(t)) t = 0;
  }
  return ignored_count;
}

LossStats SoftmaxCrossEntropy::run(const Tensor& logits, std::span<const std::int32_t> targets, Tensor* dlogits,
                                   std::int64_t divisor) {
  MIRROR_CHECK(logits.shape().size() >= 2 && logits.shape().back() >= 1, kInvalidArgument,
               "softmax cross-entropy expects logits [batch, ..., classes], got " << to_string(logits.shape()));
  MIRROR_CHECK(logits.device() == device_, kInvalidArgument,
               "loss on " << to_string(device_) << " got logits on " << to_string(logits.device()));
  const std::int64_t cols = logits.shape().back(), rows = logits.numel() / cols;
  MIRROR_CHECK(static_cast<std::int64_t>(targets.size()) == rows, kInvalidArgument,
               "softmax cross-entropy: " << rows << " rows of logits but " << targets.size() << " labels");
  const std::int64_t ignored_count = check_targets(targets, cols);
  MIRROR_CHECK(divisor >= 0, kInvalidArgument, "loss gradient divisor must be >= 0, got " << divisor);
  LossStats stats;
  stats.count = rows - ignored_count;
  if (rows == 0) return stats;
  std::span<const std::int32_t> kernel_targets = ignored_count > 0 ? std::span<const std::int32_t>(safe_targets_) : targets;

  const std::int32_t* dev_labels = kernel_targets.data();
  if (device_.is_cuda()) {
    labels_.reserve(kernel_targets.size_bytes());
    copy_host_to_device(device_, labels_.data(), kernel_targets.data(), kernel_targets.size_bytes());
    dev_labels = static_cast<const std::int32_t*>(labels_.data());
  }
  row_loss_.reserve(rows * sizeof(float));
  row_correct_.reserve(rows * sizeof(std::int32_t));
  float* dl = nullptr;
  if (dlogits) {
    if (dlogits->is_view()) {
      MIRROR_CHECK(dlogits->device() == device_ && dlogits->numel() == rows * cols, kInvalidArgument,
                   "dlogits view must be on " << to_string(device_) << " with " << rows * cols << " elements");
    } else {
      if (dlogits->device() != device_) *dlogits = Tensor({0}, device_);
      dlogits->resize(logits.shape());
    }
    dl = dlogits->data();
  }
  const std::int64_t counted = std::max<std::int64_t>(stats.count, 1);
  const float scale = 1.0f / static_cast<float>(divisor ? divisor : counted);
  ops::softmax_cross_entropy(device_, logits.data(), dev_labels, rows, cols, scale, dl,
                             static_cast<float*>(row_loss_.data()), static_cast<std::int32_t*>(row_correct_.data()));
  host_loss_.resize(rows);
  host_correct_.resize(rows);
  copy_device_to_host(device_, host_loss_.data(), row_loss_.data(), rows * sizeof(float));
  copy_device_to_host(device_, host_correct_.data(), row_correct_.data(), rows * sizeof(std::int32_t));
  for (std::int64_t r = 0; r < rows; ++r) {
    if (ignored_count > 0 && ignored(targets[r])) {
      if (dl) ops::fill(device_, dl + r * cols, cols, 0.0f);
      continue;
    }
    stats.loss_sum += host_loss_[r];
    stats.correct += host_correct_[r];
  }
  return stats;
}

}  // namespace mirror::nn
