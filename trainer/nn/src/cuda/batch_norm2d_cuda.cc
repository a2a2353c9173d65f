// batch_norm2d_cuda.cc — BatchNorm2d's CUDA kernels (batch_norm2d_kernels.h) over the launchers of
// cnn_kernels_cuda.h: per-channel host vectors go to a small device buffer before each launch, per-channel
// sums come back as doubles (synchronous copies on the legacy default stream, C values each).
#include <cstring>

#include "../batch_norm2d_kernels.h"
#include "cnn_kernels_cuda.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn::detail {
namespace {

using cuda::BnSum;

class CudaBatchNorm final : public BatchNormKernels {
 public:
  explicit CudaBatchNorm(Device device) : device_(device), params_(device, 0), sums_(device, 0) {}

  void sums(const BnBatch& b, const float* x, std::vector<double>& out) override {
    run_sums(BnSum::kValue, b, x, nullptr, nullptr, out);
  }

  void squared_deviations(const BnBatch& b, const float* x, const std::vector<double>& mean,
                          std::vector<double>& out) override {
    run_sums(BnSum::kSquaredDeviation, b, x, nullptr, &mean, out);
  }

  void gradient_sums(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                     const std::vector<float>& inv_std, std::vector<double>& sdy, std::vector<double>& sdyx) override {
    run_sums(BnSum::kGradient, b, x, dy, nullptr, sdy);
    std::vector<double> m(b.channels);
    for (std::int64_t c = 0; c < b.channels; ++c) m[c] = static_cast<double>(mean.hi[c]) + mean.lo[c];
    run_sums(BnSum::kGradientTimesDeviation, b, x, dy, &m, sdyx);
    for (std::int64_t c = 0; c < b.channels; ++c) sdyx[c] *= inv_std[c];
  }

  void normalise(const BnBatch& b, const float* x, const BnChannelMean& mean, const std::vector<float>& scale,
                 const std::vector<float>& shift, float* y) override {
    const float* p = upload({&mean.hi, &mean.lo, &scale, &shift});
    const std::int64_t c = b.channels;
    cuda::bn_normalise(x, p, p + c, p + 2 * c, p + 3 * c, b.n, c, b.area, y);
  }

  void input_gradient(const BnBatch& b, const float* dy, const float* x, const BnChannelMean& mean,
                      const std::vector<float>& inv_std, const std::vector<float>& scale,
                      const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, float* dx) override {
    const float* p = upload({&mean.hi, &mean.lo, &inv_std, &scale, &mean_dy, &mean_dyx});
    const std::int64_t c = b.channels;
    cuda::bn_input_gradient(dy, x, p, p + c, p + 2 * c, p + 3 * c, p + 4 * c, p + 5 * c, b.n, c, b.area, dx);
  }

 private:
  // Copies the per-channel vectors, one after the other, into params_; returns its device address.
  const float* upload(std::initializer_list<const std::vector<float>*> vectors) {
    std::vector<float> host;
    for (const auto* v : vectors) host.insert(host.end(), v->begin(), v->end());
    params_.reserve(host.size() * sizeof(float));
    copy_host_to_device(device_, params_.data(), host.data(), host.size() * sizeof(float));
    return static_cast<const float*>(params_.data());
  }

  void run_sums(BnSum what, const BnBatch& b, const float* x, const float* dy, const std::vector<double>* mean,
                std::vector<double>& out) {
    // sums_ holds the means (C doubles) then the sums (C doubles).
    const std::size_t bytes = static_cast<std::size_t>(b.channels) * sizeof(double);
    sums_.reserve(2 * bytes);
    double* dev_mean = static_cast<double*>(sums_.data());
    double* dev_out = dev_mean + b.channels;
    if (mean) copy_host_to_device(device_, dev_mean, mean->data(), bytes);
    cuda::bn_channel_sums(what, x, dy, dev_mean, b.n, b.channels, b.area, dev_out);
    out.resize(b.channels);
    copy_device_to_host(device_, out.data(), dev_out, bytes);
  }

  Device device_;
  DeviceBuffer params_, sums_;
};

}  // namespace

std::unique_ptr<BatchNormKernels> make_batch_norm_cuda(Device device) { return std::make_unique<CudaBatchNorm>(device); }

}  // namespace mirror::nn::detail
