// test_cnn_cuda.cc — the CNN layers on CUDA (cuDNN convolution and pooling, Mirror's BatchNorm and global
// average pooling kernels) against the same layers on the CPU (checked against plain loops and finite
// differences in test_conv_layers.cc, test_pool_layers.cc, test_batch_norm.cc): forward, input gradient,
// parameter gradients (overwrite and accumulate) and running statistics, on odd shapes; cuDNN's bfloat16
// convolutions against float32 on the CPU within bfloat16's tolerance. Every case
// GTEST_SKIPs when no CUDA GPU is visible (always in a CPU-only build).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "mirror/nn/avg_pool2d.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/conv2d.h"
#include "mirror/nn/device.h"
#include "mirror/nn/global_avg_pool2d.h"
#include "mirror/nn/max_pool2d.h"
#include "mirror/nn/precision.h"
#include "reference.h"
#include "scoped_precision.h"

namespace mirror::nn {
namespace {

using testing::max_relative_difference;
using testing::random_vector;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

// Parameters (and buffers) of one layer on one device, from the same host values.
struct DeviceParams {
  std::vector<Tensor> values, grads, buffers;
  DeviceParams(const Layer& layer, Device device, unsigned seed) {
    for (const ParamSpec& p : layer.parameter_specs()) {
      const auto v = random_vector(shape_numel(p.shape), seed++, 0.5f, 1.5f);
      values.emplace_back(p.shape, device).copy_from_host(v);
      grads.emplace_back(p.shape, device).copy_from_host(random_vector(v.size(), seed++));
    }
    for (const BufferSpec& b : layer.buffer_specs()) {
      buffers.emplace_back(b.shape, device).copy_from_host(random_vector(shape_numel(b.shape), seed++, 0.5f, 1.5f));
    }
  }
  void bind(Layer& layer) {
    std::vector<ParamBinding> bindings;
    for (std::size_t i = 0; i < values.size(); ++i) bindings.push_back({values[i].data(), grads[i].data()});
    layer.bind_parameters(bindings);
    std::vector<float*> b;
    for (auto& t : buffers) b.push_back(t.data());
    layer.bind_buffers(b);
  }
};

class CnnCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU visible";
    gpu_ = resolve_device("cuda", 0);
  }

  // Runs `make(device)` on both devices with the same parameters, input and dy (twice: kOverwrite, then
  // kAccumulate), and compares everything the layer produced.
  void compare(const std::function<std::unique_ptr<Layer>(Device)>& make, const Shape& x_shape, double rel) {
    auto cpu = make(cpu_), gpu = make(gpu_);
    DeviceParams pc(*cpu, cpu_, 7), pg(*gpu, gpu_, 7);
    pc.bind(*cpu);
    pg.bind(*gpu);
    const auto x = random_vector(shape_numel(x_shape), 3);
    Tensor xc(x_shape, cpu_), xg(x_shape, gpu_);
    xc.copy_from_host(x);
    xg.copy_from_host(x);
    for (GradMode mode : {GradMode::kOverwrite, GradMode::kAccumulate}) {
      const Tensor& yc = cpu->forward(xc);
      const Tensor& yg = gpu->forward(xg);
      expect_close(yg.to_host(), yc.to_host(), rel, "y");
      const auto r = random_vector(yc.numel(), 4);
      Tensor dyc(yc.shape(), cpu_), dyg(yc.shape(), gpu_);
      dyc.copy_from_host(r);
      dyg.copy_from_host(r);
      const Tensor* dxc = cpu->backward(dyc, mode, true, {});
      const Tensor* dxg = gpu->backward(dyg, mode, true, {});
      expect_close(dxg->to_host(), dxc->to_host(), rel, "dx");
      for (std::size_t i = 0; i < pc.grads.size(); ++i) expect_close(pg.grads[i].to_host(), pc.grads[i].to_host(), rel, "grad");
      for (std::size_t i = 0; i < pc.buffers.size(); ++i)
        expect_close(pg.buffers[i].to_host(), pc.buffers[i].to_host(), rel, "buffer");
    }
  }

  Device gpu_, cpu_;
};

TEST_F(CnnCuda, Conv2dMatchesCpu) {
  for (std::int64_t c : {3, 16}) {  // plain and blocked layouts on the CPU side
    compare([&](Device d) { return std::make_unique<Conv2d>(c, 7, 3, 2, 2, 1, 1, 0, true, d); }, {3, c, 9, 7}, 1e-4);
    compare([&](Device d) { return std::make_unique<Conv2d>(c, 5, 1, 1, 2, 2, 0, 0, false, d); }, {1, c, 6, 5}, 1e-4);
  }
}

// y, dx and the parameter gradients (overwrite, then accumulate) of a layer made by `make` on `device`, under
// `precision`, from the same inputs as every other call.
std::vector<std::vector<float>> conv_results(const std::function<std::unique_ptr<Layer>(Device)>& make, Device device,
                                             const Shape& x_shape, Precision precision, std::string* implementation) {
  const testing::ScopedPrecision scoped(precision, device);
  auto layer = make(device);
  DeviceParams params(*layer, device, 7);
  params.bind(*layer);
  Tensor x(x_shape, device);
  x.copy_from_host(random_vector(shape_numel(x_shape), 3));
  std::vector<std::vector<float>> results;
  for (GradMode mode : {GradMode::kOverwrite, GradMode::kAccumulate}) {
    const Tensor& y = layer->forward(x);
    results.push_back(y.to_host());
    Tensor dy(y.shape(), device);
    dy.copy_from_host(random_vector(y.numel(), 4));
    results.push_back(layer->backward(dy, mode, true, {})->to_host());
    for (const Tensor& g : params.grads) results.push_back(g.to_host());
  }
  *implementation = static_cast<Conv2d&>(*layer).implementation();
  return results;
}

// cuDNN's bfloat16 convolutions against float32 on the CPU: within bfloat16's tolerance (1e-2 of the largest
// value), and not equal (the operands were rounded).
TEST_F(CnnCuda, Bfloat16ConvolutionsAreCloseToFloat32OnTheCpu) {
  for (std::int64_t c : {3, 16}) {
    const auto make = [&](Device d) { return std::make_unique<Conv2d>(c, 8, 3, 3, 1, 1, 1, 1, true, d); };
    std::string cpu_kernel, gpu_kernel;
    const auto want = conv_results(make, cpu_, {4, c, 9, 7}, Precision::kFloat32, &cpu_kernel);
    const auto got = conv_results(make, gpu_, {4, c, 9, 7}, Precision::kBFloat16, &gpu_kernel);
    EXPECT_EQ(gpu_kernel, "cudnn (bf16 operands)");
    ASSERT_EQ(got.size(), want.size());
    bool differs = false;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_LT(max_relative_difference(got[i], want[i]), 1e-2) << "result " << i << " with " << c << " input channels";
      differs = differs || got[i] != want[i];
    }
    EXPECT_TRUE(differs) << "bfloat16 convolutions gave float32's results exactly";
  }
}

TEST_F(CnnCuda, PoolingMatchesCpu) {
  compare([](Device d) { return std::make_unique<MaxPool2d>(3, 3, 2, 2, 1, 1, d); }, {2, 5, 9, 7}, 1e-6);
  compare([](Device d) { return std::make_unique<AvgPool2d>(3, 2, 2, 1, 1, 1, d); }, {2, 5, 9, 7}, 1e-6);
  compare([](Device d) { return std::make_unique<GlobalAvgPool2d>(d); }, {3, 7, 5, 4}, 1e-6);
}

TEST_F(CnnCuda, BatchNormMatchesCpuInTrainingAndEvaluation) {
  compare([](Device d) { return std::make_unique<BatchNorm2d>(5, d); }, {4, 5, 3, 7}, 1e-5);
  compare(
      [](Device d) {
        auto bn = std::make_unique<BatchNorm2d>(3, d);
        bn->set_training(false);
        return bn;
      },
      {2, 3, 4, 4}, 1e-5);
}

}  // namespace
}  // namespace mirror::nn
