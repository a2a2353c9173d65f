// gelu.cc — mirror/nn/gelu.h: plain loops over the elements in float arithmetic (gelu_cpu.h), with fast_math.h's
// tanh (libm's tanhf, an out-of-line call per element, took most of a GPT's step); on CUDA lm_kernels_cuda.h's.
#include "mirror/nn/gelu.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "gelu_cpu.h"
#if MIRROR_HAVE_CUDA
#include "cuda/lm_kernels_cuda.h"
#endif

namespace mirror::nn {

Gelu::Gelu(Device device) : device_(device), y_({0}, device), dx_({0}, device) {}

std::unique_ptr<Layer> Gelu::create(const LayerArgs& args) { return std::make_unique<Gelu>(args.device); }

const Tensor& Gelu::forward(const Tensor& x) {
  x_ = &x;
  y_.resize(x.shape());
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    detail::cuda::gelu_forward(x.data(), y_.data(), x.numel());
    return y_;
  }
#endif
  detail::gelu_cpu_forward(x.data(), y_.data(), x.numel());
  return y_;
}

const Tensor* Gelu::backward(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) {
  MIRROR_CHECK(x_ != nullptr && dy.shape() == x_->shape(), kInvalidArgument,
               "gelu backward expects dy of the last forward's shape " << (x_ ? to_string(x_->shape()) : "(none)")
                                                                        << ", got " << to_string(dy.shape()));
  if (!need_dx) return nullptr;
  dx_.resize(x_->shape());
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    detail::cuda::gelu_backward(x_->data(), dy.data(), dx_.data(), dy.numel());
    return &dx_;
  }
#endif
  detail::gelu_cpu_backward(x_->data(), dy.data(), dx_.data(), dy.numel());
  return &dx_;
}

}  // namespace mirror::nn
