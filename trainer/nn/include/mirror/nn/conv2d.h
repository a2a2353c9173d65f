// mirror/nn/conv2d.h — 2-D convolution (cross-correlation, as PyTorch's nn.Conv2d with groups 1, dilation
// 1) over NCHW float32 batches: y[n,o] = b[o] + sum_c W[o,c] ⋆ x[n,c], with zero padding. Weight [out, in, kh,
// kw] and bias [out] in PyTorch's layout, so a checkpoint loads into torch directly. Output size per axis:
// (in + 2·pad − kernel) / stride + 1, rounded down (PyTorch's floor mode). CPU via oneDNN, CUDA via cuDNN (conv2d.cc).
#pragma once

#include <memory>

#include "mirror/nn/layer.h"

namespace mirror::nn {

struct LayerArgs;  // mirror/nn/layer_registry.h

namespace detail {
class Conv2dKernels;  // the device's arithmetic (src/conv2d_kernels.h)
}  // namespace detail

struct Conv2dGeometry {
  std::int64_t in_channels = 0, out_channels = 0;
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
};

// Layouts of oneDNN's primitives inside the layer: kAuto picks blocked for kernels larger than 1×1 over 8 or
// more input channels, and whenever the input comes blocked (conv2d_cpu.cc says why); kPlain / kBlocked force
// one (benchmarks, tests). Inputs and outputs are NCHW unless the model lets blocked tensors through (layer.h).
enum class ConvLayout { kAuto, kPlain, kBlocked };

class Conv2d final : public Layer {
 public:
  // Throws kInvalidArgument for non-positive channels, kernel or stride, or negative padding. CPU: oneDNN;
  // CUDA: cuDNN (a CUDA device in a CPU-only build is refused at the first forward).
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w,
         std::int64_t stride_h, std::int64_t stride_w, std::int64_t pad_h, std::int64_t pad_w, bool bias,
         Device device, ConvLayout layout = ConvLayout::kAuto);
  ~Conv2d() override;

  std::string kind() const override { return "conv2d"; }
  // The factory of the layer table (layer_table.cc): settings from a model description (docs/model-format.md).
  static std::unique_ptr<Layer> create(const LayerArgs& args);
  // [in_channels, H, W] -> [out_channels, OH, OW]; kInvalidArgument when the sample is not 3-D, has another
  // channel count, or is smaller than the kernel after padding.
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  // {"weight", [out, in, kh, kw]}, then {"bias", [out]} when the layer has a bias.
  std::vector<ParamSpec> parameter_specs() const override;
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  // Weight: He uniform U(-b, b), b = sqrt(6 / fan_in), fan_in = in·kh·kw (as Linear); bias: zeros.
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;

  // Blocked inputs on the CPU; y is blocked when allowed (set_blocked_output) and oneDNN's kernels want it.
  // x: [N, in, H, W].
  const Tensor& forward(const Tensor& x) override;
  // Reports bias (index 1, when present) and weight (index 0), then computes dx when need_dx.
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

  const Conv2dGeometry& geometry() const { return geo_; }
  // The kernels the last forward ran, as the library names them (forward / backward data / backward weights,
  // e.g. "jit_wino_4x3:avx512_core / ..." on the CPU); empty before the first forward.
  std::string implementation() const;
  bool has_bias() const { return has_bias_; }

 private:
  detail::Conv2dKernels& kernels_for(const Tensor& x, const Shape& y_shape);

  Conv2dGeometry geo_;
  bool has_bias_;
  Device device_;
  ConvLayout layout_;
  ParamBinding weight_, bias_;
  const Tensor* x_ = nullptr;  // input of the last forward
  Tensor y_, dx_;
  std::unique_ptr<detail::Conv2dKernels> kernels_;
  Shape kernels_shape_;  // the input shape, layout and output choice kernels_ were built for
  Layout kernels_layout_ = Layout::kNchw;
  bool kernels_blocked_output_ = false;
  bool kernels_bf16_ = false;  // built for bfloat16 operands (precision.h)
};

}  // namespace mirror::nn
