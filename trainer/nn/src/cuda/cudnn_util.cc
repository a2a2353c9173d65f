// cudnn_util.cc — cudnn_util.h: the handle and the tensor descriptor.
#include "cudnn_util.h"

namespace mirror::nn::detail::cuda {

cudnnHandle_t cudnn_handle() {
  // One per process: Mirror runs one GPU per process (the rank's), chosen before the first layer runs.
  static cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    MIRROR_CHECK_CUDNN(cudnnCreate(&h));
    MIRROR_CHECK_CUDNN(cudnnSetStream(h, nullptr));  // the legacy default stream
    return h;
  }();
  return handle;
}

TensorDesc::TensorDesc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, cudnnDataType_t type) {
  MIRROR_CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc_));
  MIRROR_CHECK_CUDNN(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, type, static_cast<int>(n),
                                                static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
}

TensorDesc::~TensorDesc() { (void)cudnnDestroyTensorDescriptor(desc_); }

}  // namespace mirror::nn::detail::cuda
