// mirror/coll/half.h — float16 (IEEE binary16) and bfloat16 <-> float32 conversion, round-to-nearest-even.
// Mirror's one conversion library: the host backends accumulate 16-bit reductions in float32 with it, the
// trainer narrows and widens its --grad-dtype gradients with it (loss scale folded in), and tests and
// mirror-bench build 16-bit data with it. NaN stays NaN (narrowing keeps the payload's top bits and sets the
// quiet bit; float16 -> float32 sets it too; bfloat16 -> float32 is exact bits), infinities and signed
// zeros are kept, float16 subnormals are produced and read exactly, values too large for float16 become
// infinity. The conversions themselves do not depend on the floating-point
// environment (rounding mode, DAZ/FTZ); a scaled form with a scale other than 1 first multiplies in float32
// in the current environment (by default: round to nearest even, no flushing), and the accumulating forms
// add in it.
//
// The per-value functions are the reference rule. The whole-buffer ones run a vector build picked once at
// run time from the CPU (half_kernels()): every build gives the reference's bits for every input (add2:
// the widened inputs added and divided in float32 in the current environment, as the accumulating forms
// add, then rounded by the rule; where both inputs are NaN, either one's quieted NaN).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mirror::coll {

float half_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_half(float f) noexcept;
float bfloat16_to_float(std::uint16_t b) noexcept;
std::uint16_t float_to_bfloat16(float f) noexcept;

// Whole-buffer conversions (count elements; any alignment; in and out must not overlap).
void half_to_float(const std::uint16_t* in, float* out, std::size_t count) noexcept;
void float_to_half(const float* in, std::uint16_t* out, std::size_t count) noexcept;
void bfloat16_to_float(const std::uint16_t* in, float* out, std::size_t count) noexcept;
void float_to_bfloat16(const float* in, std::uint16_t* out, std::size_t count) noexcept;

// One pass with a scale: out[i] = 16-bit(in[i] * scale) (the product rounded to float32 first), and
// out[i] = float32(in[i]) * scale. With scale 1 there is no multiply: they are the unscaled forms.
void float_to_half_scaled(const float* in, std::uint16_t* out, std::size_t count, float scale) noexcept;
void float_to_bfloat16_scaled(const float* in, std::uint16_t* out, std::size_t count, float scale) noexcept;
void half_to_float_scaled(const std::uint16_t* in, float* out, std::size_t count, float scale) noexcept;
void bfloat16_to_float_scaled(const std::uint16_t* in, float* out, std::size_t count, float scale) noexcept;

// acc[i] += float32(in[i]) (float32 addition): the host backends' 16-bit sum without a float32 copy.
void half_accumulate(const std::uint16_t* in, float* acc, std::size_t count) noexcept;
void bfloat16_accumulate(const std::uint16_t* in, float* acc, std::size_t count) noexcept;

// out[i] = 16-bit((float32(a[i]) + float32(b[i])) / divisor), in one pass (divisor 1: no division), and the
// same value into out2[i] when out2 is not null: the host backends' 2-rank 16-bit sum or average. The
// operations and their order are those of widening a, accumulating b and dividing, so the bits are too
// (where both are NaN, the NaN kept is the hardware's choice, as in any float32 sum).
// out and out2 may each be a or b, index for index (an in-place reduction); no other overlap.
void half_add2(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
               std::size_t count, float divisor) noexcept;
void bfloat16_add2(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                   std::size_t count, float divisor) noexcept;

// One build of the buffer conversions. `isa` names it: "avx512" (AVX-512F: vcvtps2ph/vcvtph2ps for float16,
// integer rounding for bfloat16), "avx2" (AVX2 + F16C, the same way at 256 bits) or "generic" (portable,
// branch-free scalar code that the compiler may vectorise for the baseline ISA).
struct HalfKernels {
  const char* isa;
  void (*float_to_half)(const float* in, std::uint16_t* out, std::size_t count, float scale) noexcept;
  void (*float_to_bfloat16)(const float* in, std::uint16_t* out, std::size_t count, float scale) noexcept;
  void (*half_to_float)(const std::uint16_t* in, float* out, std::size_t count, float scale) noexcept;
  void (*bfloat16_to_float)(const std::uint16_t* in, float* out, std::size_t count, float scale) noexcept;
  void (*half_accumulate)(const std::uint16_t* in, float* acc, std::size_t count) noexcept;
  void (*bfloat16_accumulate)(const std::uint16_t* in, float* acc, std::size_t count) noexcept;
  void (*half_add2)(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                    std::size_t count, float divisor) noexcept;
  void (*bfloat16_add2)(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out, std::uint16_t* out2,
                        std::size_t count, float divisor) noexcept;
};

// The build the buffer conversions use on this CPU: the widest one it supports (chosen once).
const HalfKernels& half_kernels() noexcept;
// Every build compiled in that this CPU can run, widest first (for tests and benchmarks).
std::span<const HalfKernels* const> supported_half_kernels() noexcept;

}  // namespace mirror::coll
