// nccl_check.h — MIRROR_CHECK_CUDA / MIRROR_CHECK_NCCL: a failed CUDA runtime or NCCL call becomes
// mirror::Error(kCuda / kNccl) with file:line, the library's error string and a hint. Private to
// collectives/, compiled only with MIRROR_HAVE_CUDA.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "mirror/error.h"

#define MIRROR_CHECK_CUDA(call)                                                                        \
  do {                                                                                                 \
    cudaError_t mirror_cuda_rc_ = (call);                                                              \
    if (mirror_cuda_rc_ != cudaSuccess)                                                                \
      MIRROR_THROW(kCuda, #call << " failed: " << cudaGetErrorString(mirror_cuda_rc_)                  \
                                << " (HINT: check the driver with nvidia-smi and CUDA_VISIBLE_DEVICES)"); \
  } while (0)

#define MIRROR_CHECK_NCCL(call)                                                                        \
  do {                                                                                                 \
    ncclResult_t mirror_nccl_rc_ = (call);                                                             \
    if (mirror_nccl_rc_ != ncclSuccess)                                                                \
      MIRROR_THROW(kNccl, #call << " failed: " << ncclGetErrorString(mirror_nccl_rc_)                  \
                                << " (HINT: rerun with NCCL_DEBUG=WARN for NCCL's own diagnosis)");    \
  } while (0)
