// batch_norm2d.cc — mirror/train/batch_norm2d.h on the CPU, in loops the compiler vectorises (omp simd over
// each H×W plane).
//
// Statistics: two passes, mean first (Σx and the count), then M2 = Σ(x − mean)², each plane summed in double.
// Synchronised, each pass ends in one reducer->sum (C + 1, then C floats): two small all-reduces per layer
// and forward instead of one, bought for safety. The one-pass Σx, Σx² would cancel catastrophically when
// |mean| ≫ std once its sums travel as floats (the reducer's type); M2 is a sum of non-negative terms, so its
// float sum over replicas loses no more than float rounding. Backward sums Σdy and Σdy·x̂ per channel and,
// synchronised, reduces those 2·C values in one call: dx = γ/σ · (dy − Σdy/M − x̂ Σ(dy·x̂)/M), global sums
// and M.
//
// Normalising, x − mean is taken as (x − hi) − lo with mean = hi + lo split into two floats: x − hi is exact
// when x is near the mean, so a large mean with a small spread keeps its digits (x·scale + shift would not).
//
// Why these loops and not oneDNN's batch_normalization primitive: oneDNN normalises with its own statistics
// and has no hook to sum them over replicas, so the synchronised path needs its own code anyway; one code path
// for both keeps 1 replica and N replicas numerically alike. And for NCHW data oneDNN 2.6 has only its non-JIT
// ncsp_bnorm, which mirror-layer-bench measured about 3x slower than these loops (docs/compute.md).
#include "mirror/train/batch_norm2d.h"

#include <algorithm>
#include <cmath>

#include "mirror/error.h"

namespace mirror::train {

BatchNorm2d::BatchNorm2d(std::int64_t channels, Device device, float momentum, float eps)
    : channels_(channels), device_(device), momentum_(momentum), eps_(eps), y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(channels > 0 && momentum >= 0.0f && momentum <= 1.0f && eps > 0.0f, kInvalidArgument,
               "batchnorm2d needs channels > 0, momentum in [0, 1] and eps > 0, got channels="
                   << channels << " momentum=" << momentum << " eps=" << eps);
  MIRROR_CHECK(device.is_cpu(), kInvalidArgument,
               "batchnorm2d on " << to_string(device) << ": only the CPU is implemented");
}

Shape BatchNorm2d::output_sample_shape(const Shape& s) const {
  MIRROR_CHECK(s.size() == 3 && s[0] == channels_ && s[1] > 0 && s[2] > 0, kInvalidArgument,
               "batchnorm2d with " << channels_ << " channels needs samples [" << channels_ << ", H, W], got "
                                   << to_string(s));
  return s;
}

std::vector<ParamSpec> BatchNorm2d::parameter_specs() const { return {{"weight", {channels_}}, {"bias", {channels_}}}; }

void BatchNorm2d::bind_parameters(std::span<const ParamBinding> bindings) {
  MIRROR_CHECK(bindings.size() == 2, kInternal, "batchnorm2d expects 2 parameter bindings, got " << bindings.size());
  weight_ = bindings[0];
  bias_ = bindings[1];
}

void BatchNorm2d::init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const {
  for (float& v : values) v = local_index == 0 ? 1.0f : 0.0f;
}

std::vector<BufferSpec> BatchNorm2d::buffer_specs() const {
  return {{"running_mean", {channels_}, 0.0f}, {"running_var", {channels_}, 1.0f}};
}

void BatchNorm2d::bind_buffers(std::span<float* const> buffers) {
  MIRROR_CHECK(buffers.size() == 2, kInternal, "batchnorm2d expects 2 buffers, got " << buffers.size());
  running_mean_ = buffers[0];
  running_var_ = buffers[1];
}

namespace {
// Per channel c: out[c] = Σ over samples and the H×W plane of f(x, c), each plane summed in double lanes.
template <typename F>
void channel_sums(const float* x, std::int64_t n, std::int64_t channels, std::int64_t area, F f,
                  std::vector<double>& out) {
  out.assign(channels, 0.0);
  for (std::int64_t n_i = 0; n_i < n; ++n_i)
    for (std::int64_t c = 0; c < channels; ++c) {
      const float* __restrict plane = x + (n_i * channels + c) * area;
      double p = 0.0;
#pragma omp simd reduction(+ : p)
      for (std::int64_t i = 0; i < area; ++i) p += f(plane[i], c);
      out[c] += p;
    }
}

// Sums `values` (and `extra`, when not null) over the replicas through their float interface.
void reduce(ReplicaReducer& reducer, std::vector<double>& values, double* extra, std::vector<float>& scratch) {
  scratch.assign(values.begin(), values.end());
  if (extra) scratch.push_back(static_cast<float>(*extra));
  reducer.sum(scratch.data(), scratch.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = scratch[i];
  if (extra) *extra = scratch.back();
}
}  // namespace

void BatchNorm2d::batch_statistics(const Tensor& x) {
  const std::int64_t n = x.dim(0), area = x.dim(2) * x.dim(3);
  ReplicaReducer* reducer = context_ ? context_->reducer : nullptr;
  std::vector<double> sum, m2;
  channel_sums(x.data(), n, channels_, area, [](float v, std::int64_t) { return static_cast<double>(v); }, sum);
  double count = static_cast<double>(n * area);
  if (reducer) reduce(*reducer, sum, &count, sums_);
  MIRROR_CHECK(count > 1.0, kInvalidArgument,
               "batchnorm2d in training needs more than one value per channel, got a batch of shape "
                   << to_string(x.shape()) << (reducer ? " over all replicas" : ""));
  std::vector<double> mean(channels_);
  for (std::int64_t c = 0; c < channels_; ++c) mean[c] = sum[c] / count;
  channel_sums(x.data(), n, channels_, area,
               [&mean](float v, std::int64_t c) {
                 const double d = v - mean[c];
                 return d * d;
               },
               m2);
  if (reducer) reduce(*reducer, m2, nullptr, sums_);
  count_ = count;
  mean_.resize(channels_);
  mean_lo_.resize(channels_);
  inv_std_.resize(channels_);
  const double m = momentum_;
  for (std::int64_t c = 0; c < channels_; ++c) {
    const double var = m2[c] / count;  // biased: what normalises
    set_mean(c, mean[c]);
    inv_std_[c] = static_cast<float>(1.0 / std::sqrt(var + eps_));
    running_mean_[c] = static_cast<float>((1.0 - m) * running_mean_[c] + m * mean[c]);
    running_var_[c] = static_cast<float>((1.0 - m) * running_var_[c] + m * m2[c] / (count - 1.0));  // unbiased
  }
}

void BatchNorm2d::set_mean(std::int64_t c, double mean) {
  mean_[c] = static_cast<float>(mean);
  mean_lo_[c] = static_cast<float>(mean - mean_[c]);
}

void BatchNorm2d::running_statistics() {
  mean_.resize(channels_);
  mean_lo_.resize(channels_);
  inv_std_.resize(channels_);
  for (std::int64_t c = 0; c < channels_; ++c) set_mean(c, running_mean_[c]);
  for (std::int64_t c = 0; c < channels_; ++c)
    inv_std_[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(running_var_[c]) + eps_));
}

void BatchNorm2d::normalise(const Tensor& x) {
  const std::int64_t n = x.dim(0), area = x.dim(2) * x.dim(3);
  y_.resize(x.shape());
  for (std::int64_t n_i = 0; n_i < n; ++n_i)
    for (std::int64_t c = 0; c < channels_; ++c) {
      const std::int64_t off = (n_i * channels_ + c) * area;
      const float* __restrict in = x.data() + off;
      float* __restrict out = y_.data() + off;
      const float scale = weight_.value[c] * inv_std_[c], shift = bias_.value[c];
      const float hi = mean_[c], lo = mean_lo_[c];
#pragma omp simd
      for (std::int64_t i = 0; i < area; ++i) out[i] = ((in[i] - hi) - lo) * scale + shift;
    }
}

const Tensor& BatchNorm2d::forward(const Tensor& x) {
  MIRROR_CHECK(weight_.value != nullptr && running_mean_ != nullptr, kInternal,
               "batchnorm2d used before its parameters and buffers were bound");
  MIRROR_CHECK(x.shape().size() == 4 && x.dim(0) > 0, kInvalidArgument,
               "batchnorm2d needs a batch [N, " << channels_ << ", H, W], got " << to_string(x.shape()));
  output_sample_shape({x.dim(1), x.dim(2), x.dim(3)});
  x_ = &x;
  batch_stats_ = training();
  if (batch_stats_) {
    batch_statistics(x);
  } else {
    running_statistics();
  }
  normalise(x);
  return y_;
}

void BatchNorm2d::sums_of_products(const float* dy, const float* x, std::int64_t n, std::int64_t area,
                                   std::vector<double>& out) const {
  out.assign(channels_, 0.0);
  for (std::int64_t n_i = 0; n_i < n; ++n_i)
    for (std::int64_t c = 0; c < channels_; ++c) {
      const std::int64_t off = (n_i * channels_ + c) * area;
      const float* __restrict g = dy + off;
      const float* __restrict in = x + off;
      const double mean = static_cast<double>(mean_[c]) + mean_lo_[c];
      double p = 0.0;
#pragma omp simd reduction(+ : p)
      for (std::int64_t i = 0; i < area; ++i) p += static_cast<double>(g[i]) * (in[i] - mean);
      out[c] += p * inv_std_[c];
    }
}

const Tensor* BatchNorm2d::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(x_ != nullptr, kInternal, "batchnorm2d backward called before forward");
  MIRROR_CHECK(dy.shape() == x_->shape(), kInvalidArgument,
               "batchnorm2d backward expects dy of shape " << to_string(x_->shape()) << ", got "
                                                           << to_string(dy.shape()));
  const std::int64_t n = dy.dim(0), c_count = channels_, area = dy.dim(2) * dy.dim(3);
  std::vector<double> sdy, sdyx;  // Σdy, Σdy·x̂
  channel_sums(dy.data(), n, c_count, area, [](float g, std::int64_t) { return static_cast<double>(g); }, sdy);
  sums_of_products(dy.data(), x_->data(), n, area, sdyx);
  const bool accumulate = mode == GradMode::kAccumulate;
  for (std::int64_t c = 0; c < c_count; ++c) {
    bias_.grad[c] = static_cast<float>(sdy[c] + (accumulate ? bias_.grad[c] : 0.0));
    weight_.grad[c] = static_cast<float>(sdyx[c] + (accumulate ? weight_.grad[c] : 0.0));
  }
  if (grad_ready) {
    grad_ready(1);
    grad_ready(0);
  }
  if (!need_dx) return nullptr;
  dx_.resize(dy.shape());
  if (!batch_stats_) {  // evaluation statistics are constants: dx = dy γ / σ
    for (std::int64_t n_i = 0; n_i < n; ++n_i)
      for (std::int64_t c = 0; c < c_count; ++c) {
        const std::int64_t off = (n_i * c_count + c) * area;
        const float* __restrict g = dy.data() + off;
        float* __restrict out = dx_.data() + off;
        const float scale = weight_.value[c] * inv_std_[c];
#pragma omp simd
        for (std::int64_t i = 0; i < area; ++i) out[i] = g[i] * scale;
      }
    return &dx_;
  }
  if (ReplicaReducer* reducer = context_ ? context_->reducer : nullptr) {
    std::vector<double> both(sdy);
    both.insert(both.end(), sdyx.begin(), sdyx.end());
    reduce(*reducer, both, nullptr, sums_);
    std::copy(both.begin(), both.begin() + c_count, sdy.begin());
    std::copy(both.begin() + c_count, both.end(), sdyx.begin());
  }
  for (std::int64_t n_i = 0; n_i < n; ++n_i)
    for (std::int64_t c = 0; c < c_count; ++c) {
      const std::int64_t off = (n_i * c_count + c) * area;
      const float* __restrict g = dy.data() + off;
      const float* __restrict in = x_->data() + off;
      float* __restrict out = dx_.data() + off;
      const float inv_std = inv_std_[c], hi = mean_[c], lo = mean_lo_[c];
      const float scale = weight_.value[c] * inv_std;
      const float mean_dy = static_cast<float>(sdy[c] / count_);
      const float mean_dyx = static_cast<float>(sdyx[c] / count_);
#pragma omp simd
      for (std::int64_t i = 0; i < area; ++i) {
        const float xhat = ((in[i] - hi) - lo) * inv_std;
        out[i] = scale * (g[i] - mean_dy - xhat * mean_dyx);
      }
    }
  return &dx_;
}

}  // namespace mirror::train
