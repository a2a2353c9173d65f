// ops_cpu.cc — the CPU backend: oneDNN's sgemm for matrix products (it picks its kernels from cpuid, AVX2 to
// AVX-512; OpenBLAS 0.3.21 runs generic Prescott kernels on CPUs it does not know, and is slower at the
// MLP's shapes: docs/benchmarks.md, "Matrix products"), plain loops over __restrict pointers (which the compiler
// vectorises) for everything else.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>

#include "backend.h"
#include "dropout_hash.h"
#include "mirror/error.h"

namespace mirror::nn::detail::cpu {

void gemm(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (k == 0) {  // a BLAS leaves C untouched-but-scaled; make beta == 0 an exact overwrite like everywhere else
    for (std::int64_t i = 0; i < m; ++i) {
      float* __restrict row = c + i * ldc;
      for (std::int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  const dnnl_status_t status = dnnl_sgemm(ta == ops::Trans::kYes ? 'T' : 'N', tb == ops::Trans::kYes ? 'T' : 'N', m, n,
                                          k, alpha, a, lda, b, ldb, beta, c, ldc);  // row-major, as ops::gemm
  MIRROR_CHECK(status == dnnl_success, kInternal,
               "dnnl_sgemm m=" << m << " n=" << n << " k=" << k << " lda=" << lda << " ldb=" << ldb << " ldc=" << ldc
                               << " failed with status " << static_cast<int>(status));
}

void add_row_bias(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  const float* __restrict b = bias;
  for (std::int64_t r = 0; r < rows; ++r) {
    float* __restrict row = y + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) row[c] += b[c];
  }
}

void column_sums(const float* x, std::int64_t rows, std::int64_t cols, float beta, float* out) {
  float* __restrict o = out;
  if (beta == 0.0f) {
    std::fill(o, o + cols, 0.0f);
  } else if (beta != 1.0f) {
    for (std::int64_t c = 0; c < cols; ++c) o[c] *= beta;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* __restrict row = x + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) o[c] += row[c];
  }
}

void relu_forward(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  // dy loaded unconditionally, so the select vectorises; as a branch on the sign of y it would be a scalar
  // loop mispredicting about every other element.
  const float* __restrict yy = y;
  const float* __restrict gg = dy;
  float* __restrict out = dx;
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gg[i];
    out[i] = yy[i] > 0.0f ? g : 0.0f;
  }
}

void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t cols,
                           float grad_scale, float* dlogits, float* row_loss, std::int32_t* row_correct) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * cols;  // dlogits may alias it (ops.h): each d[c] is written after z[c] is read
    std::int64_t arg = 0;
    float mx = z[0];
    for (std::int64_t c = 1; c < cols; ++c) {
      if (z[c] > mx) { mx = z[c]; arg = c; }
    }
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(z[c] - mx);
    const std::int32_t label = labels[r];
    row_loss[r] = std::log(sum) - (z[label] - mx);
    row_correct[r] = arg == label ? 1 : 0;
    if (dlogits) {
      float* d = dlogits + r * cols;
      const float inv = grad_scale / sum;
      for (std::int64_t c = 0; c < cols; ++c) d[c] = std::exp(z[c] - mx) * inv;
      d[label] -= grad_scale;
    }
  }
}

void sgd_update(std::int64_t n, float* p, const float* g, float* buf, float lr, float momentum, float wd,
                bool nesterov) {
  float* __restrict pp = p;
  const float* __restrict gg = g;
  if (!buf) {
    for (std::int64_t i = 0; i < n; ++i) pp[i] -= lr * (gg[i] + wd * pp[i]);
    return;
  }
  float* __restrict bb = buf;
  if (nesterov) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float d = gg[i] + wd * pp[i];
      const float v = momentum * bb[i] + d;
      bb[i] = v;
      pp[i] -= lr * (d + momentum * v);
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      const float d = gg[i] + wd * pp[i];
      const float v = momentum * bb[i] + d;
      bb[i] = v;
      pp[i] -= lr * v;
    }
  }
}

void adamw_update(std::int64_t n, float* p, const float* g, float* m, float* v, float lr, float b1, float b2,
                  float eps, float wd, float bc1, float bc2) {
  float* __restrict pp = p;
  const float* __restrict gg = g;
  float* __restrict mm = m;
  float* __restrict vv = v;
  const float decay = 1.0f - lr * wd;
  const float step_size = lr / bc1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = gg[i];
    const float mi = b1 * mm[i] + (1.0f - b1) * gi;
    const float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;
    mm[i] = mi;
    vv[i] = vi;
    pp[i] = pp[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

void fill(float* x, std::int64_t n, float value) { std::fill(x, x + n, value); }

void scale(float* x, std::int64_t n, float alpha) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

void axpy(std::int64_t n, float alpha, const float* x, float* y) {
  const float* __restrict xx = x;
  float* __restrict yy = y;
  for (std::int64_t i = 0; i < n; ++i) yy[i] += alpha * xx[i];
}

void multiply(std::int64_t n, const float* a, const float* b, float* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void dropout_mask(const std::uint64_t* row_keys, std::int64_t rows, std::int64_t per_row, float p, float keep_scale,
                  float* mask) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* __restrict row = mask + r * per_row;
    for (std::int64_t e = 0; e < per_row; ++e) row[e] = dropout_uniform_in_row(row_keys[r], e) >= p ? keep_scale : 0.0f;
  }
}

}  // namespace mirror::nn::detail::cpu
