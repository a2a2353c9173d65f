// scoped_precision.h — the nn tests' guard for the process-wide compute precision (mirror/nn/precision.h): set
// for one scope, float32 put back at its end, also when a check or the code under test throws.
#pragma once

#include "mirror/nn/device.h"
#include "mirror/nn/precision.h"

namespace mirror::nn::testing {

class ScopedPrecision {
 public:
  explicit ScopedPrecision(Precision p, const Device& device = Device{}) : device_(device) {
    set_compute_precision(p, device_);
  }
  ~ScopedPrecision() { set_compute_precision(Precision::kFloat32, device_); }
  ScopedPrecision(const ScopedPrecision&) = delete;
  ScopedPrecision& operator=(const ScopedPrecision&) = delete;

 private:
  Device device_;
};

}  // namespace mirror::nn::testing
