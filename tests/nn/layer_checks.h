// layer_checks.h — helpers the CNN layer tests share: seeded data, tensors from host vectors, central
// differences of a double-precision reference loss, and element-wise comparisons with a message naming the
// element. Nothing here calls the layer under test, so a reference built from it is independent.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "mirror/nn/tensor.h"

namespace mirror::nn::testing {

inline Tensor host_tensor(const std::vector<float>& values, Shape shape) {
  Tensor t(std::move(shape), Device{});
  t.copy_from_host(values);
  return t;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// L = Σ r ⊙ y in double: dL/dy = r.
inline double weighted(const std::vector<double>& y, const std::vector<float>& r) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

// Central differences of `loss` in each coordinate of `at`, step h (in double throughout).
inline std::vector<double> central_differences(const std::function<double(const std::vector<double>&)>& loss,
                                               std::vector<double> at, double h) {
  std::vector<double> g(at.size());
  for (std::size_t i = 0; i < at.size(); ++i) {
    const double saved = at[i];
    at[i] = saved + h;
    const double up = loss(at);
    at[i] = saved - h;
    const double down = loss(at);
    at[i] = saved;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Channel-blocked layouts by tensor.h's index formula (not oneDNN's reorders): element (n, c, i) of an
// [N, C, H, W] batch, i = h·W + w, at ((n·C/b + c/b)·H·W + i)·b + c mod b.
inline std::int64_t blocked_index(const Shape& s, std::int64_t b, std::int64_t n, std::int64_t c, std::int64_t i) {
  return ((n * (s[1] / b) + c / b) * s[2] * s[3] + i) * b + c % b;
}

inline Tensor blocked_tensor(const std::vector<float>& nchw, const Shape& s, Layout layout) {
  const std::int64_t b = channel_block(layout), area = s[2] * s[3];
  std::vector<float> out(nchw.size());
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t i = 0; i < area; ++i) out[blocked_index(s, b, n, c, i)] = nchw[(n * s[1] + c) * area + i];
  Tensor t = host_tensor(out, s);
  t.set_layout(layout);
  return t;
}

// A tensor's values in NCHW order, whatever its layout.
inline std::vector<float> nchw_values(const Tensor& t) {
  const std::vector<float> v = t.to_host();
  if (!t.blocked()) return v;
  const Shape& s = t.shape();
  const std::int64_t b = channel_block(t.layout()), area = s[2] * s[3];
  std::vector<float> out(v.size());
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t i = 0; i < area; ++i) out[(n * s[1] + c) * area + i] = v[blocked_index(s, b, n, c, i)];
  return out;
}

// |got − want| <= tol · (1 + |want|) for every element.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

}  // namespace mirror::nn::testing
