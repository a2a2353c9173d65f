// loss.cc — mirror/nn/loss.h: label checks on the host, the softmax cross-entropy kernel on the device,
// per-row results copied back and summed in double.
#include "mirror/nn/loss.h"

#include "mirror/error.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(Device device)
    : device_(device), labels_(device, 0), row_loss_(device, 0), row_correct_(device, 0) {}

LossStats SoftmaxCrossEntropy::forward(const Tensor& logits, std::span<const std::int32_t> labels) {
  return run(logits, labels, nullptr, 0);
}

LossStats SoftmaxCrossEntropy::forward_backward(const Tensor& logits, std::span<const std::int32_t> labels,
                                                Tensor& dlogits, std::int64_t grad_divisor) {
  return run(logits, labels, &dlogits, grad_divisor);
}

LossStats SoftmaxCrossEntropy::run(const Tensor& logits, std::span<const std::int32_t> labels, Tensor* dlogits,
                                   std::int64_t divisor) {
  MIRROR_CHECK(logits.shape().size() == 2 && logits.dim(1) >= 1, kInvalidArgument,
               "softmax cross-entropy expects logits [batch, classes], got " << to_string(logits.shape()));
  MIRROR_CHECK(logits.device() == device_, kInvalidArgument,
               "loss on " << to_string(device_) << " got logits on " << to_string(logits.device()));
  const std::int64_t rows = logits.dim(0), cols = logits.dim(1);
  MIRROR_CHECK(static_cast<std::int64_t>(labels.size()) == rows, kInvalidArgument,
               "softmax cross-entropy: " << rows << " rows of logits but " << labels.size() << " labels");
  for (std::int64_t r = 0; r < rows; ++r) {
    MIRROR_CHECK(labels[r] >= 0 && labels[r] < cols, kInvalidArgument,
                 "label " << labels[r] << " of sample " << r << " in the batch is outside [0, " << cols << ")");
  }
  MIRROR_CHECK(divisor >= 0, kInvalidArgument, "loss gradient divisor must be >= 0, got " << divisor);
  LossStats stats;
  stats.count = rows;
  if (rows == 0) return stats;

  const std::int32_t* dev_labels = labels.data();
  if (device_.is_cuda()) {
    labels_.reserve(labels.size_bytes());
    copy_host_to_device(device_, labels_.data(), labels.data(), labels.size_bytes());
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
  const float scale = 1.0f / static_cast<float>(divisor ? divisor : rows);
  ops::softmax_cross_entropy(device_, logits.data(), dev_labels, rows, cols, scale, dl,
                             static_cast<float*>(row_loss_.data()), static_cast<std::int32_t*>(row_correct_.data()));
  host_loss_.resize(rows);
  host_correct_.resize(rows);
  copy_device_to_host(device_, host_loss_.data(), row_loss_.data(), rows * sizeof(float));
  copy_device_to_host(device_, host_correct_.data(), row_correct_.data(), rows * sizeof(std::int32_t));
  for (std::int64_t r = 0; r < rows; ++r) {
    stats.loss_sum += host_loss_[r];
    stats.correct += host_correct_[r];
  }
  return stats;
}

}  // namespace mirror::nn
