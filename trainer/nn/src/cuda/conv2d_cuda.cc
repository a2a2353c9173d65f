// conv2d_cuda.cc — Conv2d's CUDA kernels (conv2d_kernels.h) on cuDNN: cross-correlation in FP32 FMA math (no
// TF32, so results stay within float rounding of the CPU's), algorithms from cuDNN's heuristics restricted to
// deterministic ones (so that resumed and restarted runs repeat bit for bit), bias by cudnnAddTensor, the
// weight and bias gradients with beta = 1 when accumulating.
//
// Under bfloat16 compute (precision.h) the three convolutions take bfloat16 operands (x, w and dy rounded to
// nearest even) on tensor cores with float32 accumulation: cuDNN's BFLOAT16 configuration, whose results are
// bfloat16 too, so each is widened into the layer's float32 output (PyTorch autocast's convolutions also
// return bfloat16). The bias and its gradient stay float32. Where cuDNN has no deterministic bfloat16 algorithm
// for one of the three, the layer computes in float32 (make_conv2d_cuda).
#include <optional>
#include <vector>

#include "../bf16_products.h"
#include "../conv2d_kernels.h"
#include "cudnn_util.h"
#include "mirror/nn/half_cast.h"

namespace mirror::nn::detail {
namespace {

using cuda::TensorDesc;

// The first algorithm in cuDNN's heuristic order that works and is deterministic, if any.
template <typename Perf>
auto pick(const std::vector<Perf>& perf, int returned) -> std::optional<decltype(perf[0].algo)> {
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) return perf[i].algo;
  return std::nullopt;
}

cudnnDataType_t operand_type(bool bf16) { return bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT; }

std::int64_t count(const Shape& s) { return s[0] * s[1] * s[2] * s[3]; }

class CudnnConv2d final : public Conv2dKernels {
 public:
  explicit CudnnConv2d(const Conv2dProblem& p)
      : bf16_(p.bf16),
        device_(p.device),
        y_(p.y_shape[0], p.y_shape[1], p.y_shape[2], p.y_shape[3]),
        x_operand_(p.x_shape[0], p.x_shape[1], p.x_shape[2], p.x_shape[3], operand_type(p.bf16)),
        y_operand_(p.y_shape[0], p.y_shape[1], p.y_shape[2], p.y_shape[3], operand_type(p.bf16)),
        bias_(1, p.geometry.out_channels, 1, 1),
        x_count_(count(p.x_shape)),
        y_count_(count(p.y_shape)),
        w_count_(p.geometry.out_channels * p.geometry.in_channels * p.geometry.kernel_h * p.geometry.kernel_w),
        workspace_(p.device),
        x_bf16_(p.device),
        w_bf16_(p.device),
        dy_bf16_(p.device),
        result_bf16_(p.device, 0),
        dw_widened_(p.device, 0) {
    const Conv2dGeometry& g = p.geometry;
    MIRROR_CHECK_CUDNN(cudnnCreateFilterDescriptor(&w_));
    MIRROR_CHECK_CUDNN(cudnnSetFilter4dDescriptor(w_, operand_type(bf16_), CUDNN_TENSOR_NCHW,
                                                  static_cast<int>(g.out_channels), static_cast<int>(g.in_channels),
                                                  static_cast<int>(g.kernel_h), static_cast<int>(g.kernel_w)));
    MIRROR_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv_));
    MIRROR_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv_, static_cast<int>(g.pad_h), static_cast<int>(g.pad_w),
                                                       static_cast<int>(g.stride_h), static_cast<int>(g.stride_w), 1, 1,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    MIRROR_CHECK_CUDNN(cudnnSetConvolutionMathType(conv_, bf16_ ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    choose_algorithms();
  }
  ~CudnnConv2d() override {
    (void)cudnnDestroyConvolutionDescriptor(conv_);
    (void)cudnnDestroyFilterDescriptor(w_);
  }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    const float one = 1.0f, zero = 0.0f;
    MIRROR_CHECK_CUDNN(cudnnConvolutionForward(cuda::cudnn_handle(), &one, x_operand_.get(), operand(x_bf16_, x, x_count_),
                                               w_, operand(w_bf16_, w, w_count_), conv_, fwd_algo_,
                                               workspace_.reserve(fwd_bytes_), fwd_bytes_, &zero, y_operand_.get(),
                                               result(y, y_count_)));
    widen_result(y, y_count_);
    if (b) MIRROR_CHECK_CUDNN(cudnnAddTensor(cuda::cudnn_handle(), &one, bias_.get(), b, &one, y_.get(), y));
  }

  void backward_weights(const float* x, const float* dy, float* dw, float* db, bool accumulate) override {
    const float one = 1.0f, beta = accumulate && !bf16_ ? 1.0f : 0.0f;
    if (db) {
      const float bias_beta = accumulate ? 1.0f : 0.0f;
      MIRROR_CHECK_CUDNN(cudnnConvolutionBackwardBias(cuda::cudnn_handle(), &one, y_.get(), dy, &bias_beta, bias_.get(), db));
    }
    float* target = bf16_ && accumulate ? widened_dw() : dw;
    MIRROR_CHECK_CUDNN(cudnnConvolutionBackwardFilter(cuda::cudnn_handle(), &one, x_operand_.get(),
                                                      operand(x_bf16_, x, x_count_), y_operand_.get(),
                                                      operand(dy_bf16_, dy, y_count_), conv_, filter_algo_,
                                                      workspace_.reserve(filter_bytes_), filter_bytes_, &beta, w_,
                                                      result(target, w_count_)));
    widen_result(target, w_count_);
    if (target != dw) ops::axpy(device_, w_count_, 1.0f, target, dw);
  }

  void backward_data(const float* dy, const float* w, float* dx) override {
    const float one = 1.0f, zero = 0.0f;
    MIRROR_CHECK_CUDNN(cudnnConvolutionBackwardData(cuda::cudnn_handle(), &one, w_, operand(w_bf16_, w, w_count_),
                                                    y_operand_.get(), operand(dy_bf16_, dy, y_count_), conv_,
                                                    data_algo_, workspace_.reserve(data_bytes_), data_bytes_, &zero,
                                                    x_operand_.get(), result(dx, x_count_)));
    widen_result(dx, x_count_);
  }

  std::string implementation() const override { return bf16_ ? "cudnn (bf16 operands)" : std::string(); }

  // Empty when cuDNN offered a deterministic algorithm for each of the three convolutions; else the first without.
  const char* missing_algorithm() const { return missing_; }

 private:
  // The operand cuDNN reads: the float32 values, or their bfloat16 rounding.
  const void* operand(BFloat16Copy& copy, const float* values, std::int64_t n) const {
    return bf16_ ? static_cast<const void*>(copy.round(values, n)) : values;
  }
  // Where cuDNN writes a result of n values: the float32 destination, or a bfloat16 buffer widened afterwards.
  void* result(float* destination, std::int64_t n) {
    if (!bf16_) return destination;
    result_bf16_.reserve(static_cast<std::size_t>(n) * sizeof(BFloat16));
    return result_bf16_.data();
  }
  void widen_result(float* destination, std::int64_t n) {
    if (bf16_)
      widen_from_16bit(device_, static_cast<const std::uint16_t*>(result_bf16_.data()), destination,
                       static_cast<std::size_t>(n), /*half=*/false, 1.0f);
  }
  float* widened_dw() {
    dw_widened_.reserve(static_cast<std::size_t>(w_count_) * sizeof(float));
    return static_cast<float*>(dw_widened_.data());
  }

  void choose_algorithms() {
    cudnnHandle_t h = cuda::cudnn_handle();
    int n = 0;
    {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, x_operand_.get(), w_, conv_, y_operand_.get(),
                                                                static_cast<int>(perf.size()), &n, perf.data()));
      const auto algo = pick(perf, n);
      if (!algo) return missing("forward");
      fwd_algo_ = *algo;
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, x_operand_.get(), w_, conv_, y_operand_.get(),
                                                                 fwd_algo_, &fwd_bytes_));
    }
    {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_, y_operand_.get(), conv_, x_operand_.get(),
                                                                     static_cast<int>(perf.size()), &n, perf.data()));
      const auto algo = pick(perf, n);
      if (!algo) return missing("backward data");
      data_algo_ = *algo;
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_, y_operand_.get(), conv_, x_operand_.get(),
                                                                      data_algo_, &data_bytes_));
    }
    {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_operand_.get(), y_operand_.get(), conv_, w_,
                                                                       static_cast<int>(perf.size()), &n, perf.data()));
      const auto algo = pick(perf, n);
      if (!algo) return missing("backward filter");
      filter_algo_ = *algo;
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_operand_.get(), y_operand_.get(), conv_,
                                                                        w_, filter_algo_, &filter_bytes_));
    }
  }

  void missing(const char* which) { missing_ = which; }

  bool bf16_;
  const char* missing_ = "";
  Device device_;
  TensorDesc y_;                      // float32: the bias and its gradient
  TensorDesc x_operand_, y_operand_;  // the convolutions' operands and results (bfloat16 under bf16 compute)
  TensorDesc bias_;
  std::int64_t x_count_, y_count_, w_count_;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdDataAlgo_t data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
  std::size_t fwd_bytes_ = 0, data_bytes_ = 0, filter_bytes_ = 0;
  cuda::Workspace workspace_;
  BFloat16Copy x_bf16_, w_bf16_, dy_bf16_;
  DeviceBuffer result_bf16_, dw_widened_;
};

}  // namespace

// Under bfloat16 compute, a convolution for which cuDNN has no deterministic bfloat16 algorithm computes in
// float32 (implementation() then says nothing of bf16), as the CPU does where oneDNN has no bfloat16 kernel.
std::unique_ptr<Conv2dKernels> make_conv2d_cuda(const Conv2dProblem& problem) {
  auto kernels = std::make_unique<CudnnConv2d>(problem);
  if (*kernels->missing_algorithm() != '\0' && problem.bf16) {
    Conv2dProblem float32 = problem;
    float32.bf16 = false;
    kernels = std::make_unique<CudnnConv2d>(float32);
  }
  MIRROR_CHECK(*kernels->missing_algorithm() == '\0', kCuda,
               "cuDNN offers no deterministic " << kernels->missing_algorithm() << " algorithm for this convolution");
  return kernels;
}

}  // namespace mirror::nn::detail
