// conv2d_cuda.cc — Conv2d's CUDA kernels (conv2d_kernels.h) on cuDNN: cross-correlation in FP32 FMA math (no
// TF32, so results stay within float rounding of the CPU's), algorithms from cuDNN's heuristics restricted to
// deterministic ones (so that resumed and restarted runs repeat bit for bit), bias by cudnnAddTensor, the
// weight and bias gradients with beta = 1 when accumulating.
#include <vector>

#include "../conv2d_kernels.h"
#include "cudnn_util.h"

namespace mirror::nn::detail {
namespace {

using cuda::TensorDesc;

// The first algorithm in cuDNN's heuristic order that works, is deterministic and uses FMA math.
template <typename Perf>
auto pick(const std::vector<Perf>& perf, int returned, const char* what) {
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) return perf[i].algo;
  MIRROR_THROW(kCuda, "cuDNN offers no deterministic " << what << " algorithm for this convolution");
}

class CudnnConv2d final : public Conv2dKernels {
 public:
  explicit CudnnConv2d(const Conv2dProblem& p)
      : x_(p.x_shape[0], p.x_shape[1], p.x_shape[2], p.x_shape[3]),
        y_(p.y_shape[0], p.y_shape[1], p.y_shape[2], p.y_shape[3]),
        bias_(1, p.geometry.out_channels, 1, 1),
        workspace_(p.device) {
    const Conv2dGeometry& g = p.geometry;
    MIRROR_CHECK_CUDNN(cudnnCreateFilterDescriptor(&w_));
    MIRROR_CHECK_CUDNN(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(g.out_channels),
                                                  static_cast<int>(g.in_channels), static_cast<int>(g.kernel_h),
                                                  static_cast<int>(g.kernel_w)));
    MIRROR_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv_));
    MIRROR_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv_, static_cast<int>(g.pad_h), static_cast<int>(g.pad_w),
                                                       static_cast<int>(g.stride_h), static_cast<int>(g.stride_w), 1, 1,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    MIRROR_CHECK_CUDNN(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
    choose_algorithms();
  }
  ~CudnnConv2d() override {
    (void)cudnnDestroyConvolutionDescriptor(conv_);
    (void)cudnnDestroyFilterDescriptor(w_);
  }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    const float one = 1.0f, zero = 0.0f;
    MIRROR_CHECK_CUDNN(cudnnConvolutionForward(cuda::cudnn_handle(), &one, x_.get(), x, w_, w, conv_, fwd_algo_,
                                               workspace_.reserve(fwd_bytes_), fwd_bytes_, &zero, y_.get(), y));
    if (b) MIRROR_CHECK_CUDNN(cudnnAddTensor(cuda::cudnn_handle(), &one, bias_.get(), b, &one, y_.get(), y));
  }

  void backward_weights(const float* x, const float* dy, float* dw, float* db, bool accumulate) override {
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    if (db) MIRROR_CHECK_CUDNN(cudnnConvolutionBackwardBias(cuda::cudnn_handle(), &one, y_.get(), dy, &beta, bias_.get(), db));
    MIRROR_CHECK_CUDNN(cudnnConvolutionBackwardFilter(cuda::cudnn_handle(), &one, x_.get(), x, y_.get(), dy, conv_,
                                                      filter_algo_, workspace_.reserve(filter_bytes_), filter_bytes_,
                                                      &beta, w_, dw));
  }

  void backward_data(const float* dy, const float* w, float* dx) override {
    const float one = 1.0f, zero = 0.0f;
    MIRROR_CHECK_CUDNN(cudnnConvolutionBackwardData(cuda::cudnn_handle(), &one, w_, w, y_.get(), dy, conv_, data_algo_,
                                                    workspace_.reserve(data_bytes_), data_bytes_, &zero, x_.get(), dx));
  }

 private:
  void choose_algorithms() {
    cudnnHandle_t h = cuda::cudnn_handle();
    int n = 0;
    {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, x_.get(), w_, conv_, y_.get(),
                                                                static_cast<int>(perf.size()), &n, perf.data()));
      fwd_algo_ = pick(perf, n, "forward");
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, x_.get(), w_, conv_, y_.get(), fwd_algo_, &fwd_bytes_));
    }
    {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_, y_.get(), conv_, x_.get(),
                                                                     static_cast<int>(perf.size()), &n, perf.data()));
      data_algo_ = pick(perf, n, "backward data");
      MIRROR_CHECK_CUDNN(
          cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_, y_.get(), conv_, x_.get(), data_algo_, &data_bytes_));
    }
    {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_.get(), y_.get(), conv_, w_,
                                                                       static_cast<int>(perf.size()), &n, perf.data()));
      filter_algo_ = pick(perf, n, "backward filter");
      MIRROR_CHECK_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_.get(), y_.get(), conv_, w_, filter_algo_,
                                                                        &filter_bytes_));
    }
  }

  TensorDesc x_, y_, bias_;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdDataAlgo_t data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
  std::size_t fwd_bytes_ = 0, data_bytes_ = 0, filter_bytes_ = 0;
  cuda::Workspace workspace_;
};

}  // namespace

std::unique_ptr<Conv2dKernels> make_conv2d_cuda(const Conv2dProblem& problem) {
  return std::make_unique<CudnnConv2d>(problem);
}

}  // namespace mirror::nn::detail
