// reference.h — plain serial references for the compute-core tests: naive triple-loop products in double,
// seeded random data. Nothing here calls Mirror code, so the tests compare against an independent result.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace mirror::nn::testing {

// max |a − b| over max |b| (the largest value sets the scale, as a tolerance of bfloat16 or of a reordered sum
// is relative to it).
inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Element (i, j) of op(M) where M is row-major with leading dimension ld.
inline double at(const std::vector<float>& m, std::int64_t ld, bool trans, std::int64_t i, std::int64_t j) {
  return trans ? m[j * ld + i] : m[i * ld + j];
}

// C = alpha op(A) op(B) + beta C in double, row-major.
inline std::vector<double> naive_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                                      const std::vector<float>& a, std::int64_t lda, const std::vector<float>& b,
                                      std::int64_t ldb, double beta, const std::vector<float>& c, std::int64_t ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      out[i * ldc + j] = alpha * s + (beta == 0 ? 0.0 : beta * c[i * ldc + j]);
    }
  return out;
}

// Softmax cross-entropy of one row in double: -log softmax(z)[label].
inline double naive_xent(const double* z, std::int64_t cols, int label) {
  double mx = z[0];
  for (std::int64_t c = 1; c < cols; ++c) mx = std::max(mx, z[c]);
  double s = 0;
  for (std::int64_t c = 0; c < cols; ++c) s += std::exp(z[c] - mx);
  return std::log(s) + mx - z[label];
}

// A plain MLP in double: layers given as (W [out,in], b [out]) from host vectors; ReLU between.
struct NaiveMlp {
  std::vector<std::int64_t> sizes;  // in, h1, ..., classes
  // Mean cross-entropy over the batch for flat parameters laid out fc1.weight, fc1.bias, fc2.weight, ...
  double loss(const std::vector<double>& params, const std::vector<float>& x, const std::vector<int>& y,
              std::int64_t batch) const {
    double total = 0;
    for (std::int64_t r = 0; r < batch; ++r) {
      std::vector<double> h(x.begin() + r * sizes[0], x.begin() + (r + 1) * sizes[0]);
      std::size_t off = 0;
      for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
        const std::int64_t in = sizes[l], out = sizes[l + 1];
        std::vector<double> o(out);
        for (std::int64_t i = 0; i < out; ++i) {
          double s = params[off + in * out + i];  // bias
          for (std::int64_t j = 0; j < in; ++j) s += params[off + i * in + j] * h[j];
          o[i] = (l + 2 < sizes.size()) ? std::max(s, 0.0) : s;
        }
        off += in * out + out;
        h = o;
      }
      total += naive_xent(h.data(), sizes.back(), y[r]);
    }
    return total / batch;
  }
};

}  // namespace mirror::nn::testing
