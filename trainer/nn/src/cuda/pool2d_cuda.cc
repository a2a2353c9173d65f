// pool2d_cuda.cc — Pool2d's CUDA kernels (pool2d_kernels.h) on cuDNN: CUDNN_POOLING_MAX_DETERMINISTIC (its
// backward gives each gradient to one winner, in a fixed order) or CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
// (PyTorch's count_include_pad), NaNs not propagated; backward reads the forward's x and y.
#include "../pool2d_kernels.h"
#include "cudnn_util.h"

namespace mirror::nn::detail {
namespace {

using cuda::TensorDesc;

class CudnnPool2d final : public Pool2dKernels {
 public:
  explicit CudnnPool2d(const Pool2dProblem& p)
      : x_(p.x_shape[0], p.x_shape[1], p.x_shape[2], p.x_shape[3]),
        y_(p.y_shape[0], p.y_shape[1], p.y_shape[2], p.y_shape[3]) {
    const Pool2dWindow& w = p.window;
    MIRROR_CHECK_CUDNN(cudnnCreatePoolingDescriptor(&pool_));
    MIRROR_CHECK_CUDNN(cudnnSetPooling2dDescriptor(
        pool_, p.mode == PoolMode::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(w.kernel_h), static_cast<int>(w.kernel_w),
        static_cast<int>(w.pad_h), static_cast<int>(w.pad_w), static_cast<int>(w.stride_h),
        static_cast<int>(w.stride_w)));
  }
  ~CudnnPool2d() override { (void)cudnnDestroyPoolingDescriptor(pool_); }

  void forward(const float* x, float* y) override {
    const float one = 1.0f, zero = 0.0f;
    MIRROR_CHECK_CUDNN(cudnnPoolingForward(cuda::cudnn_handle(), pool_, &one, x_.get(), x, &zero, y_.get(), y));
  }

  void backward(const float* x, const float* y, const float* dy, float* dx) override {
    const float one = 1.0f, zero = 0.0f;
    MIRROR_CHECK_CUDNN(cudnnPoolingBackward(cuda::cudnn_handle(), pool_, &one, y_.get(), y, y_.get(), dy, x_.get(), x,
                                            &zero, x_.get(), dx));
  }

 private:
  TensorDesc x_, y_;
  cudnnPoolingDescriptor_t pool_ = nullptr;
};

}  // namespace

std::unique_ptr<Pool2dKernels> make_pool2d_cuda(const Pool2dProblem& problem) {
  return std::make_unique<CudnnPool2d>(problem);
}

}  // namespace mirror::nn::detail
