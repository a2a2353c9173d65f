// ops_cuda.cu — the CUDA backend's kernels: cuBLAS sgemm (row-major expressed as column-major with the
// operands swapped) and small grid-stride kernels for the rest, all on the legacy default stream.
#include <cstdint>

#include <algorithm>

#include "../backend.h"
#include "../dropout_hash.h"
#include "classifier_cuda.h"
#include "launch_cuda.h"

namespace mirror::nn::detail::cuda {
namespace {

__global__ void add_row_bias_kernel(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  MIRROR_GRID_LOOP(i, rows * cols) { y[i] += bias[i % cols]; }
}

__global__ void column_sums_kernel(const float* x, std::int64_t rows, std::int64_t cols, float beta, float* out) {
  MIRROR_GRID_LOOP(c, cols) {
    float s = 0.0f;
    for (std::int64_t r = 0; r < rows; ++r) s += x[r * cols + c];
    out[c] = beta == 0.0f ? s : beta * out[c] + s;
  }
}

__global__ void relu_forward_kernel(const float* x, float* y, std::int64_t n) {
  MIRROR_GRID_LOOP(i, n) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, std::int64_t n) {
  MIRROR_GRID_LOOP(i, n) { dx[i] = y[i] > 0.0f ? dy[i] : 0.0f; }
}

// One thread per row, for narrow rows (an image model's tens of classes; wide ones: classifier_cuda.cu).
__global__ void softmax_xent_kernel(const float* logits, const std::int32_t* labels, std::int64_t rows,
                                    std::int64_t cols, float grad_scale, float* dlogits, float* row_loss,
                                    std::int32_t* row_correct) {
  MIRROR_GRID_LOOP(r, rows) {
    const float* z = logits + r * cols;
    std::int64_t arg = 0;
    float mx = z[0];
    for (std::int64_t c = 1; c < cols; ++c) {
      if (z[c] > mx) { mx = z[c]; arg = c; }
    }
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += expf(z[c] - mx);
    const std::int32_t label = labels[r];
    row_loss[r] = logf(sum) - (z[label] - mx);
    row_correct[r] = arg == label ? 1 : 0;
    if (dlogits) {
      float* d = dlogits + r * cols;
      const float inv = grad_scale / sum;
      for (std::int64_t c = 0; c < cols; ++c) d[c] = expf(z[c] - mx) * inv;
      d[label] -= grad_scale;
    }
  }
}

__global__ void sgd_kernel(std::int64_t n, float* p, const float* g, float* buf, float lr, float momentum, float wd,
                           bool nesterov) {
  MIRROR_GRID_LOOP(i, n) {
    float d = g[i] + wd * p[i];
    if (buf) {
      const float v = momentum * buf[i] + d;
      buf[i] = v;
      d = nesterov ? d + momentum * v : v;
    }
    p[i] -= lr * d;
  }
}

__global__ void adamw_kernel(std::int64_t n, float* p, const float* g, float* m, float* v, float lr, float b1,
                             float b2, float eps, float wd, float bc1, float bc2) {
  const float decay = 1.0f - lr * wd;
  const float step_size = lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
  MIRROR_GRID_LOOP(i, n) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1.0f - b1) * gi;
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + eps);
  }
}

__global__ void fill_kernel(float* x, std::int64_t n, float value) {
  MIRROR_GRID_LOOP(i, n) { x[i] = value; }
}

__global__ void scale_kernel(float* x, std::int64_t n, float alpha) {
  MIRROR_GRID_LOOP(i, n) { x[i] *= alpha; }
}

__global__ void axpy_kernel(std::int64_t n, float alpha, const float* x, float* y) {
  MIRROR_GRID_LOOP(i, n) { y[i] += alpha * x[i]; }
}

__global__ void multiply_kernel(std::int64_t n, const float* a, const float* b, float* y) {
  MIRROR_GRID_LOOP(i, n) { y[i] = a[i] * b[i]; }
}

// Dropout's keys, one per sample, for one launch (dropout_mask below copies them in chunks of this many).
constexpr std::int64_t kDropoutRowsPerLaunch = 4096;
__constant__ std::uint64_t dropout_row_keys[kDropoutRowsPerLaunch];

__global__ void dropout_mask_kernel(std::int64_t rows, std::int64_t per_row, float p, float keep_scale, float* mask) {
  MIRROR_GRID_LOOP(i, rows * per_row) {
    const std::int64_t r = i / per_row, e = i - r * per_row;
    mask[i] = ::mirror::nn::detail::dropout_uniform_in_row(dropout_row_keys[r], e) >= p ? keep_scale : 0.0f;
  }
}

cublasOperation_t op(ops::Trans t) { return t == ops::Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

// Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ: call cuBLAS with B first and m, n swapped.
void gemm(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  MIRROR_CHECK_CUBLAS(cublasSgemm(cublas_handle(), op(tb), op(ta), static_cast<int>(n), static_cast<int>(m),
                                  static_cast<int>(k), &alpha, b, static_cast<int>(ldb), a, static_cast<int>(lda),
                                  &beta, c, static_cast<int>(ldc)));
}

void add_row_bias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  add_row_bias_kernel<<<blocks_for(rows * cols), kThreads>>>(y, bias, rows, cols);
  check_launch();
}

void column_sums(const float* x, std::int64_t rows, std::int64_t cols, float beta, float* out) {
  column_sums_kernel<<<blocks_for(cols), kThreads>>>(x, rows, cols, beta, out);
  check_launch();
}

void relu_forward(const float* x, float* y, std::int64_t n) {
  relu_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  check_launch();
}

void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  relu_backward_kernel<<<blocks_for(n), kThreads>>>(y, dy, dx, n);
  check_launch();
}

void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t cols,
                           float grad_scale, float* dlogits, float* row_loss, std::int32_t* row_correct) {
  if (cols >= kWideClassifierColumns) {
    softmax_cross_entropy_wide(logits, labels, rows, cols, grad_scale, dlogits, row_loss, row_correct);
    return;
  }
  softmax_xent_kernel<<<blocks_for(rows), kThreads>>>(logits, labels, rows, cols, grad_scale, dlogits, row_loss,
                                                      row_correct);
  check_launch();
}

void sgd_update(std::int64_t n, float* p, const float* g, float* buf, float lr, float momentum, float wd,
                bool nesterov) {
  sgd_kernel<<<blocks_for(n), kThreads>>>(n, p, g, buf, lr, momentum, wd, nesterov);
  check_launch();
}

void adamw_update(std::int64_t n, float* p, const float* g, float* m, float* v, float lr, float b1, float b2,
                  float eps, float wd, float bc1, float bc2) {
  adamw_kernel<<<blocks_for(n), kThreads>>>(n, p, g, m, v, lr, b1, b2, eps, wd, bc1, bc2);
  check_launch();
}

void fill(float* x, std::int64_t n, float value) {
  fill_kernel<<<blocks_for(n), kThreads>>>(x, n, value);
  check_launch();
}

void scale(float* x, std::int64_t n, float alpha) {
  scale_kernel<<<blocks_for(n), kThreads>>>(x, n, alpha);
  check_launch();
}

void axpy(std::int64_t n, float alpha, const float* x, float* y) {
  axpy_kernel<<<blocks_for(n), kThreads>>>(n, alpha, x, y);
  check_launch();
}

void multiply(std::int64_t n, const float* a, const float* b, float* y) {
  multiply_kernel<<<blocks_for(n), kThreads>>>(n, a, b, y);
  check_launch();
}

void dropout_mask(const std::uint64_t* row_keys, std::int64_t rows, std::int64_t per_row, float p, float keep_scale,
                  float* mask) {
  // The keys go to constant memory, a chunk per launch; on the legacy default stream each copy waits for the
  // launch before it, so a chunk's keys are not overwritten while its kernel still reads them.
  for (std::int64_t r0 = 0; r0 < rows; r0 += kDropoutRowsPerLaunch) {
    const std::int64_t n = std::min(kDropoutRowsPerLaunch, rows - r0);
    MIRROR_CHECK_CUDA(cudaMemcpyToSymbol(dropout_row_keys, row_keys + r0, static_cast<std::size_t>(n) * sizeof(std::uint64_t)));
    dropout_mask_kernel<<<blocks_for(n * per_row), kThreads>>>(n, per_row, p, keep_scale, mask + r0 * per_row);
    check_launch();
  }
}

}  // namespace mirror::nn::detail::cuda
