// global_avg_pool2d.cc — mirror/nn/global_avg_pool2d.h: one mean per (sample, channel) plane, summed in
// double (a plane of a few thousand floats stays exact to float rounding), and its broadcast backward. CPU
// loops here; on CUDA the kernels of cuda/cnn_kernels.cu.
#include "mirror/nn/global_avg_pool2d.h"

#include <algorithm>
#include <vector>

#include "backend.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#if MIRROR_HAVE_CUDA
#include "cuda/cnn_kernels_cuda.h"
#endif

namespace mirror::nn {

namespace {
void forward_cpu(const float* __restrict in, std::int64_t planes, std::int64_t area, float* __restrict out) {
  for (std::int64_t p = 0; p < planes; ++p) {
    double s = 0;
    for (std::int64_t i = 0; i < area; ++i) s += in[p * area + i];
    out[p] = static_cast<float>(s / static_cast<double>(area));
  }
}

void backward_cpu(const float* __restrict g, std::int64_t planes, std::int64_t area, float* __restrict out) {
  const float inv = 1.0f / static_cast<float>(area);
  for (std::int64_t p = 0; p < planes; ++p) {
    const float v = g[p] * inv;
    for (std::int64_t i = 0; i < area; ++i) out[p * area + i] = v;
  }
}
// The same over a channel-blocked batch (tensor.h): channel cb·b + l of sample n is lane l of block (n, cb).
void forward_blocked_cpu(const float* __restrict in, std::int64_t n, std::int64_t channels, std::int64_t area,
                         std::int64_t b, float* __restrict out) {
  std::vector<double> acc(b);
  for (std::int64_t s = 0; s < n; ++s)
    for (std::int64_t cb = 0; cb < channels / b; ++cb) {
      const float* block = in + (s * channels + cb * b) * area;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::int64_t i = 0; i < area; ++i)
        for (std::int64_t l = 0; l < b; ++l) acc[l] += block[i * b + l];
      for (std::int64_t l = 0; l < b; ++l) out[s * channels + cb * b + l] = static_cast<float>(acc[l] / area);
    }
}

void backward_blocked_cpu(const float* __restrict g, std::int64_t n, std::int64_t channels, std::int64_t area,
                          std::int64_t b, float* __restrict out) {
  const float inv = 1.0f / static_cast<float>(area);
  for (std::int64_t s = 0; s < n; ++s)
    for (std::int64_t cb = 0; cb < channels / b; ++cb) {
      float* block = out + (s * channels + cb * b) * area;
      const float* v = g + s * channels + cb * b;
      for (std::int64_t i = 0; i < area; ++i)
        for (std::int64_t l = 0; l < b; ++l) block[i * b + l] = v[l] * inv;
    }
}

}  // namespace

GlobalAvgPool2d::GlobalAvgPool2d(Device device) : device_(device), y_({0}, device), dx_({0}, device) {
  accepts_blocked_ = device.is_cpu();
#if !MIRROR_HAVE_CUDA
  detail::require_cpu(device);
#endif
}

Shape GlobalAvgPool2d::output_sample_shape(const Shape& s) const {
  MIRROR_CHECK(s.size() == 3 && s[0] > 0 && s[1] > 0 && s[2] > 0, kInvalidArgument,
               "global_avgpool needs samples [C, H, W], got " << to_string(s));
  return {s[0]};
}

const Tensor& GlobalAvgPool2d::forward(const Tensor& x) {
  MIRROR_CHECK(x.shape().size() == 4 && x.dim(0) > 0, kInvalidArgument,
               "global_avgpool needs a batch [N, C, H, W], got " << to_string(x.shape()));
  output_sample_shape({x.dim(1), x.dim(2), x.dim(3)});
  x_shape_ = x.shape();
  x_layout_ = x.layout();
  const std::int64_t planes = x.dim(0) * x.dim(1), area = x.dim(2) * x.dim(3);
  y_.resize({x.dim(0), x.dim(1)});
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    detail::cuda::global_avg_pool_forward(x.data(), planes, area, y_.data());
    return y_;
  }
#endif
  if (x.blocked()) {
    forward_blocked_cpu(x.data(), x.dim(0), x.dim(1), area, channel_block(x.layout()), y_.data());
  } else {
    forward_cpu(x.data(), planes, area, y_.data());
  }
  return y_;
}

const Tensor* GlobalAvgPool2d::backward(const Tensor& dy, GradMode mode, bool need_dx,
                                        const LayerGradReady& grad_ready) {
  MIRROR_CHECK(!x_shape_.empty(), kInternal, "global_avgpool backward called before forward");
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               "global_avgpool backward expects dy of shape " << to_string(y_.shape()) << ", got "
                                                              << to_string(dy.shape()));
  if (!need_dx) return nullptr;
  dx_.resize(x_shape_);
  const std::int64_t planes = x_shape_[0] * x_shape_[1], area = x_shape_[2] * x_shape_[3];
#if MIRROR_HAVE_CUDA
  if (device_.is_cuda()) {
    detail::cuda::global_avg_pool_backward(dy.data(), planes, area, dx_.data());
    return &dx_;
  }
#endif
  dx_.set_layout(x_layout_);
  if (dx_.blocked()) {
    backward_blocked_cpu(dy.data(), x_shape_[0], x_shape_[1], area, channel_block(x_layout_), dx_.data());
  } else {
    backward_cpu(dy.data(), planes, area, dx_.data());
  }
  return &dx_;
}

// No settings.
std::unique_ptr<Layer> GlobalAvgPool2d::create(const LayerArgs& args) { return std::make_unique<GlobalAvgPool2d>(args.device); }

}  // namespace mirror::nn
