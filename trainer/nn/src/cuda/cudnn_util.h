// cudnn_util.h (private) — cuDNN for the CUDA layers: MIRROR_CHECK_CUDNN (a failed call becomes mirror::Error
// kCuda with the call, cuDNN's message and file:line), the process's cuDNN handle (on the legacy default
// stream, like all of Mirror's CUDA work), RAII descriptors, and a device workspace that only grows.
#pragma once

#include <cudnn.h>

#include <cstddef>

#include "mirror/error.h"
#include "mirror/nn/tensor.h"

#define MIRROR_CHECK_CUDNN(call)                                                                              \
  do {                                                                                                        \
    const cudnnStatus_t mirror_cudnn_status_ = (call);                                                        \
    if (mirror_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                                         \
      MIRROR_THROW(kCuda, #call << " failed: " << cudnnGetErrorString(mirror_cudnn_status_));                 \
  } while (0)

namespace mirror::nn::detail::cuda {

// Created on first use for the current device and kept for the life of the process.
cudnnHandle_t cudnn_handle();

// NCHW tensor descriptor [n, c, h, w], float32 unless told otherwise.
class TensorDesc {
 public:
  TensorDesc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
             cudnnDataType_t type = CUDNN_DATA_FLOAT);
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// Device scratch memory for cuDNN's algorithms; grows, never shrinks.
class Workspace {
 public:
  explicit Workspace(Device device) : buffer_(device, 0) {}
  void* reserve(std::size_t bytes) {
    buffer_.reserve(bytes);
    return bytes ? buffer_.data() : nullptr;
  }

 private:
  DeviceBuffer buffer_;
};

}  // namespace mirror::nn::detail::cuda
