// mirror/nn/ops.h — the numerical kernels every layer, loss and optimizer is built from, on either
// device: row-major sgemm (OpenBLAS / cuBLAS) and small element-wise kernels (plain vectorisable loops on
// the CPU, CUDA kernels on the GPU). Pointers are memory of `device`. On CUDA every call is queued on the
// legacy default stream and returns before it completes; call synchronize(device) before reading on the host.
#pragma once

#include <cstdint>

#include "mirror/nn/device.h"

namespace mirror::nn::ops {

enum class Trans { kNo, kYes };

// C[m,n] = alpha * op(A)[m,k] · op(B)[k,n] + beta * C, all row-major with leading dimensions lda/ldb/ldc.
// beta == 0 overwrites C (NaNs in C are not propagated).
void gemm(const Device& device, Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);

// y[r, c] += bias[c] for every row r of a rows x cols row-major matrix.
void add_row_bias(const Device& device, float* y, const float* bias, std::int64_t rows, std::int64_t cols);

// out[c] = beta * out[c] + sum_r x[r, c]  (the bias gradient; beta 0 overwrites, 1 accumulates).
void column_sums(const Device& device, const float* x, std::int64_t rows, std::int64_t cols, float beta,
                 float* out);

// y = max(x, 0); may run in place.
void relu_forward(const Device& device, const float* x, float* y, std::int64_t n);
// dx = dy where y > 0, else 0 (y is the forward output); may run in place on dy.
void relu_backward(const Device& device, const float* y, const float* dy, float* dx, std::int64_t n);

// Softmax cross-entropy of each row of logits[rows, cols] against labels (already checked in [0, cols)):
// row_loss[r] = logsumexp(z_r) - z_r[label_r] (max-shifted, stable), row_correct[r] = 1 when the first
// arg-max of z_r is the label, else 0; when dlogits is not null, dlogits = (softmax(z) - onehot) * grad_scale.
// dlogits may be logits itself (the gradient written over them).
void softmax_cross_entropy(const Device& device, const float* logits, const std::int32_t* labels,
                           std::int64_t rows, std::int64_t cols, float grad_scale, float* dlogits,
                           float* row_loss, std::int32_t* row_correct);

// SGD as in PyTorch: g = grad + weight_decay * p; when momentum_buf: buf = momentum * buf + g and
// g = nesterov ? g + momentum * buf : buf; then p -= lr * g.
void sgd_update(const Device& device, std::int64_t n, float* params, const float* grads, float* momentum_buf,
                float lr, float momentum, float weight_decay, bool nesterov);

// AdamW (decoupled weight decay): p *= 1 - lr * weight_decay; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g²;
// p -= lr * (m / bias_correction1) / (sqrt(v / bias_correction2) + eps).
void adamw_update(const Device& device, std::int64_t n, float* params, const float* grads, float* exp_avg,
                  float* exp_avg_sq, float lr, float beta1, float beta2, float eps, float weight_decay,
                  float bias_correction1, float bias_correction2);

// x[i] = value.
void fill(const Device& device, float* x, std::int64_t n, float value);
// x[i] *= alpha.
void scale(const Device& device, float* x, std::int64_t n, float alpha);
// y[i] += alpha * x[i].
void axpy(const Device& device, std::int64_t n, float alpha, const float* x, float* y);
// y[i] = a[i] * b[i]; may run in place (y == a or y == b).
void multiply(const Device& device, std::int64_t n, const float* a, const float* b, float* y);
// Dropout's mask (mirror/nn/dropout.h): mask[r * per_row + e] = keep_scale where the keyed draw of element e
// of row r (row_keys: `rows` keys in host memory, one per sample) is >= p, else 0; `mask` on the device.
void dropout_mask(const Device& device, const std::uint64_t* row_keys, std::int64_t rows, std::int64_t per_row,
                  float p, float keep_scale, float* mask);

}  // namespace mirror::nn::ops
