// batch_norm_max_pool.cc — mirror/nn/batch_norm_max_pool.h: the two layers wired to each other once, then run
// in turn.
#include "mirror/nn/batch_norm_max_pool.h"

#include "bn_hand_over.h"
#include "mirror/error.h"
#include "pool2d_kernels.h"

namespace mirror::nn {

bool BatchNormMaxPool::can_fuse(const BatchNorm2d& bn, const Pool2d& pool) {
  return pool.mode() == PoolMode::kMax && detail::is_2x2_stride_2(pool.window()) && bn.accepts_blocked() &&
         pool.accepts_blocked();
}

BatchNormMaxPool::BatchNormMaxPool(std::unique_ptr<BatchNorm2d> bn, bool relu, std::unique_ptr<Pool2d> pool)
    : bn_(std::move(bn)), pool_(std::move(pool)), relu_(relu) {
  MIRROR_CHECK(bn_ && pool_ && can_fuse(*bn_, *pool_), kInternal,
               "batchnorm2d+maxpool2d: needs a BatchNorm2d and a 2x2 stride-2 max pooling on the CPU");
  if (relu_) pool_->absorb_preceding_relu();  // max∘relu = relu∘max, on the smaller tensor
  auto hand_over = std::make_shared<detail::NormalisationHandOver>();
  hand_over->pooled_gradient = true;
  MIRROR_CHECK(pool_->take_normalisation(hand_over) && bn_->hand_normalisation_over(hand_over), kInternal,
               "batchnorm2d+maxpool2d: the layers refused the hand-over");
  bn_->set_blocked_output(true);
  accepts_blocked_ = true;
}

Shape BatchNormMaxPool::output_sample_shape(const Shape& input_sample_shape) const {
  return pool_->output_sample_shape(bn_->output_sample_shape(input_sample_shape));
}

const Tensor& BatchNormMaxPool::forward(const Tensor& x) {
  for (Layer* part : {static_cast<Layer*>(bn_.get()), static_cast<Layer*>(pool_.get())}) {
    part->set_training(training());
    part->set_forward_context(context_);
  }
  pool_->set_blocked_output(blocked_output_);
  return pool_->forward(bn_->forward(x));
}

const Tensor* BatchNormMaxPool::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  const Tensor* d_normalised = pool_->backward(dy, GradMode::kOverwrite, true, {});
  return bn_->backward(*d_normalised, mode, need_dx, grad_ready);
}

}  // namespace mirror::nn
