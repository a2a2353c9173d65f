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

// |got − want| <= tol · (1 + |want|) for every element.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

}  // namespace mirror::nn::testing
