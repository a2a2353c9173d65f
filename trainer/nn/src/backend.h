// backend.h (private) — the two implementations behind mirror/nn/ops.h and tensor memory: detail::cpu
// (ops_cpu.cc) and detail::cuda (cuda/*, only in a CUDA build), and the dispatch macro that picks one from
// a Device. In a CPU-only build a CUDA device is refused with a clear error instead of being dispatched.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mirror/nn/device.h"
#include "mirror/nn/ops.h"

namespace mirror::nn::detail {

// Throws kInvalidArgument when `device` is CUDA in a build without CUDA.
void require_cpu(const Device& device);

#define MIRROR_NN_BACKEND_OPS                                                                             \
  void gemm(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,       \
            const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,          \
            std::int64_t ldc);                                                                               \
  void add_row_bias(float* y, const float* bias, std::int64_t rows, std::int64_t cols);                     \
  void column_sums(const float* x, std::int64_t rows, std::int64_t cols, float beta, float* out);           \
  void relu_forward(const float* x, float* y, std::int64_t n);                                              \
  void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n);                           \
  void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t rows,            \
                             std::int64_t cols, float grad_scale, float* dlogits, float* row_loss,          \
                             std::int32_t* row_correct);                                                    \
  void sgd_update(std::int64_t n, float* p, const float* g, float* buf, float lr, float momentum, float wd,  \
                  bool nesterov);                                                                           \
  void adamw_update(std::int64_t n, float* p, const float* g, float* m, float* v, float lr, float b1,       \
                    float b2, float eps, float wd, float bc1, float bc2);                                   \
  void fill(float* x, std::int64_t n, float value);                                                         \
  void scale(float* x, std::int64_t n, float alpha);                                                        \
  void axpy(std::int64_t n, float alpha, const float* x, float* y);                                          \
  void multiply(std::int64_t n, const float* a, const float* b, float* y);                                    \
  void dropout_mask(const std::uint64_t* row_keys, std::int64_t rows, std::int64_t per_row, float p,         \
                    float keep_scale, float* mask);

namespace cpu {
MIRROR_NN_BACKEND_OPS
}  // namespace cpu

#if MIRROR_HAVE_CUDA
namespace cuda {
MIRROR_NN_BACKEND_OPS
int device_count() noexcept;              // 0 on any error
void set_device(int index);
void* allocate(std::size_t bytes);
void release(void* p) noexcept;
void copy_h2d(void* dst, const void* src, std::size_t bytes);
void copy_d2h(void* dst, const void* src, std::size_t bytes);
void copy_d2d(void* dst, const void* src, std::size_t bytes);
void copy_d2d_rows(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
                   std::size_t rows);
void synchronize();
}  // namespace cuda
#define MIRROR_NN_DISPATCH(device, fn, ...)                                      \
  ((device).is_cuda() ? ::mirror::nn::detail::cuda::fn(__VA_ARGS__)              \
                      : ::mirror::nn::detail::cpu::fn(__VA_ARGS__))
#else
#define MIRROR_NN_DISPATCH(device, fn, ...) \
  (::mirror::nn::detail::require_cpu(device), ::mirror::nn::detail::cpu::fn(__VA_ARGS__))
#endif

}  // namespace mirror::nn::detail
