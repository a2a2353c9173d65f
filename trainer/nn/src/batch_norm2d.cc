// batch_norm2d.cc — mirror/nn/batch_norm2d.h: the statistics, the running-statistics update, SyncBN's
// reductions and the order of backward, on small per-channel host vectors; the bulk loops over the batch are
// the device's BatchNormKernels (batch_norm2d_kernels.h: vectorised loops on the CPU, CUDA kernels). γ, β and
// the running statistics live in device memory (the model's buffers): their C values are copied to the host
// and back where they are used.
//
// Statistics: two passes over the local batch, mean first (Σx and the count, in double), then M2 = Σ(x − mean)²
// (on the CPU in float partials added to doubles: batch_norm2d_cpu.cc). Synchronised, every replica's (count, mean, M2) travel in one reducer->gather (as
// PyTorch's SyncBatchNorm gathers mean, invstd and count) and every replica combines them in replica order in
// double (Chan et al.'s parallel update: mean = Σ n_r·mean_r / N, M2 = Σ M2_r + n_r·(mean_r − mean)²), so all
// replicas get the same bits. One collective per layer and forward, so the ranks wait for each other once
// there, not twice as two sum all-reduces (Σx, then M2 about the global mean) would make them
// (docs/benchmarks.md, "SyncBN in one gather"). Nothing cancels: M2 is a sum of non-negative terms, and the
// count and the means travel as two floats each (hi + lo: one float would leave a mean of 1000 off by up to
// 3e-5, a large part of a spread of 0.01; so would Σx summed as floats).
// Backward sums Σdy and Σdy·x̂ per channel and, synchronised, reduces those 2·C values in one call:
// dx = γ/σ · (dy − Σdy/M − x̂ Σ(dy·x̂)/M), global sums and M.
//
// Normalising, x − mean is taken as (x − hi) − lo with mean = hi + lo split into two floats: x − hi is exact
// when x is near the mean, so a large mean with a small spread keeps its digits (x·scale + shift would not).
//
// Why own loops and not oneDNN's batch_normalization primitive: oneDNN normalises with its own statistics
// and has no hook to sum them over replicas, so the synchronised path needs its own code anyway; one code path
// for both keeps 1 replica and N replicas numerically alike (and it is faster: batch_norm2d_cpu.cc).
#include "mirror/nn/batch_norm2d.h"

#include <cmath>

#include "batch_norm2d_kernels.h"
#include "bn_hand_over.h"
#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"

namespace mirror::nn {
namespace {

std::vector<float> read(const Device& device, const float* data, std::int64_t count) {
  std::vector<float> host(count);
  copy_device_to_host(device, host.data(), data, host.size() * sizeof(float));
  return host;
}

void write(const Device& device, float* data, const std::vector<float>& host) {
  copy_host_to_device(device, data, host.data(), host.size() * sizeof(float));
}

}  // namespace

BatchNorm2d::BatchNorm2d(std::int64_t channels, Device device, float momentum, float eps)
    : channels_(channels), device_(device), momentum_(momentum), eps_(eps), y_({0}, device), dx_({0}, device),
      sums_({0}, device), gathered_({0}, device) {
  accepts_blocked_ = device.is_cpu();  // y and dx in x's layout
  MIRROR_CHECK(channels > 0 && momentum >= 0.0f && momentum <= 1.0f && eps > 0.0f, kInvalidArgument,
               "batchnorm2d needs channels > 0, momentum in [0, 1] and eps > 0, got channels="
                   << channels << " momentum=" << momentum << " eps=" << eps);
#if MIRROR_HAVE_CUDA
  kernels_ = device.is_cuda() ? detail::make_batch_norm_cuda(device) : detail::make_batch_norm_cpu();
#else
  MIRROR_CHECK(device.is_cpu(), kInvalidArgument,
               "batchnorm2d on " << to_string(device) << " but this build has no CUDA (MIRROR_WITH_CUDA=OFF)");
  kernels_ = detail::make_batch_norm_cpu();
#endif
}

BatchNorm2d::~BatchNorm2d() = default;

Shape BatchNorm2d::output_sample_shape(const Shape& s) const {
  MIRROR_CHECK(s.size() == 3 && s[0] == channels_ && s[1] > 0 && s[2] > 0, kInvalidArgument,
               "batchnorm2d with " << channels_ << " channels needs samples [" << channels_ << ", H, W], got "
                                   << to_string(s));
  return s;
}

std::vector<ParamSpec> BatchNorm2d::parameter_specs() const {
  return {{"weight", {channels_}, true}, {"bias", {channels_}, true}};
}

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

ReplicaReducer* BatchNorm2d::reducer() const { return context_ ? context_->reducer : nullptr; }

void BatchNorm2d::reduce(std::vector<double>& values) {
  std::vector<float> host(values.begin(), values.end());
  sums_.resize({static_cast<std::int64_t>(host.size())});
  sums_.copy_from_host(host);
  reducer()->sum(sums_.data(), host.size());
  sums_.copy_to_host(host);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = host[i];
}

void BatchNorm2d::set_statistics(const std::vector<double>& mean, const std::vector<double>& var) {
  mean_ = detail::split_mean(mean);
  inv_std_.resize(channels_);
  for (std::int64_t c = 0; c < channels_; ++c) inv_std_[c] = static_cast<float>(1.0 / std::sqrt(var[c] + eps_));
}

void BatchNorm2d::combine_over_replicas(std::vector<double>& mean, std::vector<double>& m2, double& count) {
  // Per replica: count (hi, lo), mean (C hi, then C lo), M2 (C).
  const std::size_t c_count = static_cast<std::size_t>(channels_), per = 3 * c_count + 2;
  std::vector<float> mine(per);
  auto split = [&mine](std::size_t hi_at, std::size_t lo_at, double v) {
    mine[hi_at] = static_cast<float>(v);
    mine[lo_at] = static_cast<float>(v - mine[hi_at]);
  };
  split(0, 1, count);
  for (std::size_t c = 0; c < c_count; ++c) {
    split(2 + c, 2 + c_count + c, mean[c]);
    mine[2 + 2 * c_count + c] = static_cast<float>(m2[c]);
  }
  const std::size_t replicas = static_cast<std::size_t>(reducer()->replicas());
  sums_.resize({static_cast<std::int64_t>(per)});
  sums_.copy_from_host(mine);
  gathered_.resize({static_cast<std::int64_t>(replicas * per)});
  reducer()->gather(sums_.data(), gathered_.data(), per);
  std::vector<float> all(replicas * per);
  gathered_.copy_to_host(all);
  auto joined = [&all](std::size_t hi_at, std::size_t lo_at) { return double{all[hi_at]} + double{all[lo_at]}; };
  std::vector<double> n(replicas);
  count = 0;
  for (std::size_t r = 0; r < replicas; ++r) count += n[r] = joined(r * per, r * per + 1);
  for (std::size_t c = 0; c < c_count; ++c) {
    std::vector<double> m(replicas);
    double weighted = 0, spread = 0;
    for (std::size_t r = 0; r < replicas; ++r) {
      m[r] = joined(r * per + 2 + c, r * per + 2 + c_count + c);
      weighted += n[r] * m[r];
    }
    mean[c] = count > 0 ? weighted / count : 0.0;
    for (std::size_t r = 0; r < replicas; ++r)
      spread += all[r * per + 2 + 2 * c_count + c] + n[r] * (m[r] - mean[c]) * (m[r] - mean[c]);
    m2[c] = spread;
  }
}

void BatchNorm2d::batch_statistics(const Tensor& x) {
  const detail::BnBatch b{x.dim(0), channels_, x.dim(2) * x.dim(3), channel_block(x.layout())};
  std::vector<double> mean, m2;
  double count = static_cast<double>(b.n * b.area);
  kernels_->sums(b, x.data(), mean);
  for (auto& m : mean) m = count > 0 ? m / count : 0.0;
  kernels_->squared_deviations(b, x.data(), mean, m2);
  if (reducer()) combine_over_replicas(mean, m2, count);
  MIRROR_CHECK(count > 1.0, kInvalidArgument,
               "batchnorm2d in training needs more than one value per channel, got a batch of shape "
                   << to_string(x.shape()) << (reducer() ? " over all replicas" : ""));
  std::vector<double> var(channels_);
  count_ = count;
  auto rm = read(device_, running_mean_, channels_), rv = read(device_, running_var_, channels_);
  const double m = momentum_;
  for (std::int64_t c = 0; c < channels_; ++c) {
    var[c] = m2[c] / count;  // biased: what normalises
    rm[c] = static_cast<float>((1.0 - m) * rm[c] + m * mean[c]);
    rv[c] = static_cast<float>((1.0 - m) * rv[c] + m * m2[c] / (count - 1.0));  // unbiased
  }
  write(device_, running_mean_, rm);
  write(device_, running_var_, rv);
  set_statistics(mean, var);
}

void BatchNorm2d::running_statistics() {
  const auto rm = read(device_, running_mean_, channels_), rv = read(device_, running_var_, channels_);
  set_statistics(std::vector<double>(rm.begin(), rm.end()), std::vector<double>(rv.begin(), rv.end()));
}

bool BatchNorm2d::absorb_following_relu() {
  relu_after_ = device_.is_cpu();
  return relu_after_;
}

bool BatchNorm2d::hand_normalisation_over(std::shared_ptr<detail::NormalisationHandOver> to) {
  if (!device_.is_cpu() || relu_after_) return false;
  hand_over_ = std::move(to);
  return true;
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
  gamma_ = read(device_, weight_.value, channels_);
  scale_.resize(channels_);
  for (std::int64_t c = 0; c < channels_; ++c) scale_[c] = gamma_[c] * inv_std_[c];
  shift_ = read(device_, bias_.value, channels_);
  handed_over_ = hand_over_ && x.blocked();
  if (hand_over_) {
    hand_over_->pending = handed_over_;
    hand_over_->affine = {mean_.hi.data(), mean_.lo.data(), scale_.data(), shift_.data()};
    hand_over_->gradient = {};
  }
  if (handed_over_) return x;  // the layer after this one normalises as it reads
  y_.resize(x.shape());
  y_.set_layout(x.layout());
  detail::BnBatch b{x.dim(0), channels_, x.dim(2) * x.dim(3), channel_block(x.layout())};
  b.relu = relu_after_;
  kernels_->normalise(b, x.data(), mean_, scale_, shift_, y_.data());
  return y_;
}

detail::BnBatch BatchNorm2d::backward_batch(const Tensor& dy) const {
  detail::BnBatch b{dy.dim(0), channels_, dy.dim(2) * dy.dim(3), channel_block(dy.layout())};
  if (relu_after_) {  // dy is the absorbed ReLU's, masked in the loops where the forward's normalised x was > 0
    b.relu_scale = scale_.data();
    b.relu_shift = shift_.data();
  }
  return b;
}

const detail::PooledGradient* BatchNorm2d::pooled_gradient(const Tensor& dy) const {
  if (!handed_over_ || !hand_over_->pooled_gradient) return nullptr;
  const detail::PooledGradient& g = hand_over_->gradient;
  MIRROR_CHECK(g.dy != nullptr && g.winners != nullptr && g.out_h == dy.dim(2) / 2 && g.out_w == dy.dim(3) / 2 &&
                   g.in_w == dy.dim(3),
               kInternal, "batchnorm2d backward: the pooling after it handed back no gradient for this forward");
  return &g;
}

void BatchNorm2d::write_parameter_gradients(const std::vector<double>& sdy, const std::vector<double>& sdyx,
                                            GradMode mode, const LayerGradReady& grad_ready) {
  const bool accumulate = mode == GradMode::kAccumulate;
  std::vector<float> dbeta = accumulate ? read(device_, bias_.grad, channels_) : std::vector<float>(channels_, 0.0f);
  std::vector<float> dgamma = accumulate ? read(device_, weight_.grad, channels_) : std::vector<float>(channels_, 0.0f);
  for (std::int64_t c = 0; c < channels_; ++c) {
    dbeta[c] = static_cast<float>(sdy[c] + dbeta[c]);
    dgamma[c] = static_cast<float>(sdyx[c] + dgamma[c]);
  }
  write(device_, bias_.grad, dbeta);
  write(device_, weight_.grad, dgamma);
  if (grad_ready) {
    grad_ready(1);
    grad_ready(0);
  }
}

void BatchNorm2d::mean_terms(std::vector<double>& sdy, std::vector<double>& sdyx, std::vector<float>& mean_dy,
                             std::vector<float>& mean_dyx) {
  // Evaluation statistics are constants (dx = dy γ / σ); batch statistics bring the two mean terms, summed
  // over all replicas when synchronised.
  mean_dy.assign(channels_, 0.0f);
  mean_dyx.assign(channels_, 0.0f);
  if (!batch_stats_) return;
  if (reducer()) {
    std::vector<double> both(sdy);
    both.insert(both.end(), sdyx.begin(), sdyx.end());
    reduce(both);
    std::copy(both.begin(), both.begin() + channels_, sdy.begin());
    std::copy(both.begin() + channels_, both.end(), sdyx.begin());
  }
  for (std::int64_t c = 0; c < channels_; ++c) {
    mean_dy[c] = static_cast<float>(sdy[c] / count_);
    mean_dyx[c] = static_cast<float>(sdyx[c] / count_);
  }
}

const Tensor* BatchNorm2d::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(x_ != nullptr, kInternal, "batchnorm2d backward called before forward");
  MIRROR_CHECK(dy.shape() == x_->shape(), kInvalidArgument,
               "batchnorm2d backward expects dy of shape " << to_string(x_->shape()) << ", got "
                                                           << to_string(dy.shape()));
  MIRROR_CHECK(dy.layout() == x_->layout(), kInternal,
               "batchnorm2d backward expects dy in layout " << to_string(x_->layout()) << ", got "
                                                            << to_string(dy.layout()));
  const detail::BnBatch b = backward_batch(dy);
  // Handed to a pooling: dy is its placeholder, the gradient its pooled one and its winners.
  const detail::PooledGradient* pooled = pooled_gradient(dy);
  std::vector<double> sdy, sdyx;  // Σdy, Σdy·x̂
  if (pooled)
    kernels_->pooled_gradient_sums(b, *pooled, x_->data(), mean_, inv_std_, sdy, sdyx);
  else
    kernels_->gradient_sums(b, dy.data(), x_->data(), mean_, inv_std_, sdy, sdyx);
  write_parameter_gradients(sdy, sdyx, mode, grad_ready);
  if (!need_dx) return nullptr;
  std::vector<float> mean_dy, mean_dyx, scale(channels_);
  mean_terms(sdy, sdyx, mean_dy, mean_dyx);
  for (std::int64_t c = 0; c < channels_; ++c) scale[c] = gamma_[c] * inv_std_[c];
  dx_.resize(dy.shape());
  dx_.set_layout(dy.layout());
  if (pooled)
    kernels_->pooled_input_gradient(b, *pooled, x_->data(), mean_, inv_std_, scale, mean_dy, mean_dyx, dx_.data());
  else
    kernels_->input_gradient(b, dy.data(), x_->data(), mean_, inv_std_, scale, mean_dy, mean_dyx, dx_.data());
  return &dx_;
}

// Settings: momentum (0.1, PyTorch's convention), eps (1e-5).
std::unique_ptr<Layer> BatchNorm2d::create(const LayerArgs& args) {
  const LayerSettings& s = args.settings;
  MIRROR_CHECK(args.input.size() == 3, kInvalidArgument,
               s.where() << " needs image samples [C, H, W], got " << to_string(args.input));
  const double momentum = s.number("momentum", 0.1), eps = s.number("eps", 1e-5);
  MIRROR_CHECK(momentum >= 0.0 && momentum <= 1.0, kInvalidArgument,
               s.where() << ": momentum must be in [0, 1], got " << momentum);
  MIRROR_CHECK(eps > 0.0, kInvalidArgument, s.where() << ": eps must be positive, got " << eps);
  return std::make_unique<BatchNorm2d>(args.input[0], args.device, static_cast<float>(momentum), static_cast<float>(eps));
}

}  // namespace mirror::nn
