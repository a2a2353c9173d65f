// mirror/coll/half.h — float16 (IEEE binary16) and bfloat16 <-> float32 conversion, round-to-nearest-even.
// Mirror's own: the host backend accumulates 16-bit reductions in float32 with these, and tests and
// mirror-bench build 16-bit data with them. NaN stays NaN (quiet), infinities and signed zeros are kept,
// float16 subnormals are produced and read exactly, values too large for float16 become infinity.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mirror::coll {

float half_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_half(float f) noexcept;
float bfloat16_to_float(std::uint16_t b) noexcept;
std::uint16_t float_to_bfloat16(float f) noexcept;

// Whole-buffer conversions (count elements).
void half_to_float(const std::uint16_t* in, float* out, std::size_t count) noexcept;
void float_to_half(const float* in, std::uint16_t* out, std::size_t count) noexcept;
void bfloat16_to_float(const std::uint16_t* in, float* out, std::size_t count) noexcept;
void float_to_bfloat16(const float* in, std::uint16_t* out, std::size_t count) noexcept;

}  // namespace mirror::coll
