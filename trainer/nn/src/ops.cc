// ops.cc — mirror/nn/ops.h: argument checks, then dispatch to the CPU or CUDA backend.
#include "mirror/nn/ops.h"

#include <limits>

#include "backend.h"
#include "mirror/error.h"

namespace mirror::nn::ops {
namespace {
void check_dims(std::int64_t m, std::int64_t n, std::int64_t k) {
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  MIRROR_CHECK(m >= 0 && n >= 0 && k >= 0 && m <= kMax && n <= kMax && k <= kMax, kInvalidArgument,
               "gemm: dimensions m=" << m << " n=" << n << " k=" << k << " must be in [0, 2^31)");
}
}  // namespace

void gemm(const Device& device, Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  check_dims(m, n, k);
  if (m == 0 || n == 0) return;
  MIRROR_NN_DISPATCH(device, gemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void add_row_bias(const Device& device, float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  if (rows * cols == 0) return;
  MIRROR_NN_DISPATCH(device, add_row_bias, y, bias, rows, cols);
}

void column_sums(const Device& device, const float* x, std::int64_t rows, std::int64_t cols, float beta,
                 float* out) {
  if (cols == 0) return;
  MIRROR_NN_DISPATCH(device, column_sums, x, rows, cols, beta, out);
}

void relu_forward(const Device& device, const float* x, float* y, std::int64_t n) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, relu_forward, x, y, n);
}

void relu_backward(const Device& device, const float* y, const float* dy, float* dx, std::int64_t n) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, relu_backward, y, dy, dx, n);
}

void softmax_cross_entropy(const Device& device, const float* logits, const std::int32_t* labels,
                           std::int64_t rows, std::int64_t cols, float grad_scale, float* dlogits,
                           float* row_loss, std::int32_t* row_correct) {
  MIRROR_CHECK(cols > 0, kInvalidArgument, "softmax_cross_entropy: need at least one class, got " << cols);
  if (rows == 0) return;
  MIRROR_NN_DISPATCH(device, softmax_cross_entropy, logits, labels, rows, cols, grad_scale, dlogits, row_loss,
                        row_correct);
}

void sgd_update(const Device& device, std::int64_t n, float* params, const float* grads, float* momentum_buf,
                float lr, float momentum, float weight_decay, bool nesterov) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, sgd_update, n, params, grads, momentum_buf, lr, momentum, weight_decay, nesterov);
}

void adamw_update(const Device& device, std::int64_t n, float* params, const float* grads, float* exp_avg,
                  float* exp_avg_sq, float lr, float beta1, float beta2, float eps, float weight_decay,
                  float bias_correction1, float bias_correction2) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, adamw_update, n, params, grads, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
                        weight_decay, bias_correction1, bias_correction2);
}

void fill(const Device& device, float* x, std::int64_t n, float value) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, fill, x, n, value);
}

void scale(const Device& device, float* x, std::int64_t n, float alpha) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, scale, x, n, alpha);
}

void axpy(const Device& device, std::int64_t n, float alpha, const float* x, float* y) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, axpy, n, alpha, x, y);
}

void multiply(const Device& device, std::int64_t n, const float* a, const float* b, float* y) {
  if (n == 0) return;
  MIRROR_NN_DISPATCH(device, multiply, n, a, b, y);
}

void dropout_mask(const Device& device, const std::uint64_t* row_keys, std::int64_t rows, std::int64_t per_row,
                  float p, float keep_scale, float* mask) {
  if (rows * per_row == 0) return;
  MIRROR_NN_DISPATCH(device, dropout_mask, row_keys, rows, per_row, p, keep_scale, mask);
}

}  // namespace mirror::nn::ops
