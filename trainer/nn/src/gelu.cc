// gelu.cc — mirror/nn/gelu.h: plain loops over the elements in float arithmetic, with fast_math.h's tanh (libm's
// tanhf, an out-of-line call per element, took most of a GPT's step).
#include "mirror/nn/gelu.h"

#include <cmath>

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "fast_math.h"

namespace mirror::nn {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

}  // namespace

Gelu::Gelu(Device device) : device_(device), y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(device.is_cpu(), kInvalidArgument, "gelu runs on the CPU only in this build, not on " << to_string(device));
}

std::unique_ptr<Layer> Gelu::create(const LayerArgs& args) { return std::make_unique<Gelu>(args.device); }

const Tensor& Gelu::forward(const Tensor& x) {
  x_ = &x;
  y_.resize(x.shape());
  const float* in = x.data();
  float* out = y_.data();
#pragma omp simd
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const float v = in[i];
    out[i] = 0.5f * v * (1.0f + detail::tanh_bounded_error(kSqrt2OverPi * (v + kCubic * v * v * v)));
  }
  return y_;
}

const Tensor* Gelu::backward(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) {
  MIRROR_CHECK(x_ != nullptr && dy.shape() == x_->shape(), kInvalidArgument,
               "gelu backward expects dy of the last forward's shape " << (x_ ? to_string(x_->shape()) : "(none)")
                                                                        << ", got " << to_string(dy.shape()));
  if (!need_dx) return nullptr;
  dx_.resize(x_->shape());
  const float *x = x_->data(), *g = dy.data();
  float* out = dx_.data();
#pragma omp simd
  for (std::int64_t i = 0; i < dy.numel(); ++i) {
    const float v = x[i];
    const float t = detail::tanh_bounded_error(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float inner_grad = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    out[i] = g[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * inner_grad);
  }
  return &dx_;
}

}  // namespace mirror::nn
