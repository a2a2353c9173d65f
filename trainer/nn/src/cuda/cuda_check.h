// cuda_check.h (private) — MIRROR_CHECK_CUDA / MIRROR_CHECK_CUBLAS: turn a failed CUDA runtime or cuBLAS
// call into mirror::Error (kCuda / kCublas) with the call, the error name and file:line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "mirror/error.h"

#define MIRROR_CHECK_CUDA(call)                                                                          \
  do {                                                                                                   \
    const cudaError_t mirror_cuda_status_ = (call);                                                      \
    if (mirror_cuda_status_ != cudaSuccess)                                                              \
      MIRROR_THROW(kCuda, #call << " failed: " << cudaGetErrorName(mirror_cuda_status_) << " ("          \
                                << cudaGetErrorString(mirror_cuda_status_) << ")");                      \
  } while (0)

#define MIRROR_CHECK_CUBLAS(call)                                                                        \
  do {                                                                                                   \
    const cublasStatus_t mirror_cublas_status_ = (call);                                                 \
    if (mirror_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                  \
      MIRROR_THROW(kCublas, #call << " failed: " << cublasGetStatusName(mirror_cublas_status_) << " ("   \
                                  << cublasGetStatusString(mirror_cublas_status_) << ")");               \
  } while (0)

namespace mirror::nn::detail::cuda {
// The process's cuBLAS handle for the current device, created on first use (on the legacy default stream)
// and kept for the life of the process (destroying it at exit could outlive the CUDA context).
cublasHandle_t cublas_handle();
}  // namespace mirror::nn::detail::cuda
