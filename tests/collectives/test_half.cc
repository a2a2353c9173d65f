// test_half.cc — float16/bfloat16 conversion against known IEEE bit patterns and round-to-nearest-even
// cases worked out by hand, and exact round trips of every 16-bit pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "mirror/coll/half.h"

namespace mirror::coll {
namespace {

TEST(Half, KnownValues) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);                  // largest finite
  EXPECT_EQ(float_to_half(6.103515625e-05f), 0x0400);          // smallest normal 2^-14
  EXPECT_EQ(float_to_half(5.9604644775390625e-08f), 0x0001);   // smallest subnormal 2^-24
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);                      // overflow to infinity
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), 5.9604644775390625e-08f);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);
  // Just above halfway rounds up.
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(float_to_half(2049.0f), float_to_half(2048.0f));   // tie, even
  EXPECT_EQ(float_to_half(2051.0f), float_to_half(2052.0f));   // tie, even
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);                  // below the overflow tie
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);                  // the tie rounds to infinity
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);                  // half the smallest subnormal: tie to 0
  EXPECT_EQ(float_to_half(0x1.8p-24f), 0x0002);                // 1.5 subnormal ulps: tie to even 2
}

TEST(Half, EveryPatternRoundTrips) {
  for (unsigned h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

TEST(BFloat16, KnownValuesAndRounding) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(-2.0f), 0xC000);
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1p-8f), 0x3F80);          // tie to even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * 0x1p-8f), 0x3F82);      // tie to even (up)
  EXPECT_EQ(float_to_bfloat16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(float_to_bfloat16(257.0f), float_to_bfloat16(256.0f));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  for (unsigned b = 0; b < 0x10000; ++b) {
    const float f = bfloat16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), b) << std::hex << b;
  }
}

}  // namespace
}  // namespace mirror::coll
