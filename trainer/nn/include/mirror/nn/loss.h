// mirror/nn/loss.h — softmax cross-entropy over logits [batch, classes] and integer labels: the mean
// loss, and sums (loss, correct predictions, count) that evaluation adds up over batches and ranks.
// dlogits = (softmax - onehot) / batch, so that the average over N ranks of batch B equals the gradient
// of one rank with batch N·B.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

struct LossStats {
  double loss_sum = 0;      // sum over samples of -log softmax(z)[label]
  std::int64_t correct = 0;  // samples whose first arg-max is the label
  std::int64_t count = 0;    // samples

  double mean_loss() const { return count ? loss_sum / count : 0.0; }
  double accuracy() const { return count ? static_cast<double>(correct) / count : 0.0; }
  LossStats& operator+=(const LossStats& o) {
    loss_sum += o.loss_sum; correct += o.correct; count += o.count;
    return *this;
  }
};

// Holds per-batch scratch (labels and per-row results on the device), grown on first use and reused.
class SoftmaxCrossEntropy {
 public:
  explicit SoftmaxCrossEntropy(Device device);

  // Loss and accuracy only. labels (host): one per row, each in [0, classes), else kInvalidArgument
  // naming the row, the label and the class count.
  LossStats forward(const Tensor& logits, std::span<const std::int32_t> labels);
  // Also writes dlogits (resized to the logits' shape) = (softmax - onehot) / grad_divisor, where
  // grad_divisor 0 means the batch size.
  LossStats forward_backward(const Tensor& logits, std::span<const std::int32_t> labels, Tensor& dlogits,
                             std::int64_t grad_divisor = 0);

 private:
  LossStats run(const Tensor& logits, std::span<const std::int32_t> labels, Tensor* dlogits, std::int64_t divisor);
  Device device_;
  DeviceBuffer labels_, row_loss_, row_correct_;
  std::vector<float> host_loss_;
  std::vector<std::int32_t> host_correct_;
};

}  // namespace mirror::nn
