// test_grad_compression.cc — the trainer's 16-bit gradient conversions (grad_compression.h, which run
// coll/half.h's vector builds) against the collectives' per-value reference rule (mirror/coll/half.h,
// itself tested against the IEEE values) bit for bit, NaN payloads included, over a sweep of float32 bit
// patterns (every sign, exponent and many mantissas: subnormals, the float16 overflow edge, ties), with and
// without a loss scale; and the dynamic loss scale's rules. (Every build against the reference on every
// length and alignment: tests/collectives/test_half_kernels.cc.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mirror/coll/half.h"
#include "mirror/error.h"
#include "mirror/train/grad_compression.h"

using namespace mirror;

namespace {

std::vector<float> sweep() {
  std::vector<float> v;
  for (std::uint64_t u = 0; u < (1ull << 32); u += 65521) {  // a prime stride: all exponents, varied mantissas
    float f;
    const auto bits = static_cast<std::uint32_t>(u);
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  // Ties and edges: float16's largest value, the rounding edge to infinity, subnormal halves, bfloat16 ties.
  for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 2.98023224e-8f, 5.96046448e-8f, 8.94069672e-8f,
                  6.10351562e-5f, 6.09755516e-5f, 1.00048828f, 1.00146484f, 1.00390625f, 1.01171875f, 0.0f, -0.0f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()})
    v.insert(v.end(), {f, -f});
  return v;
}

bool is_nan16(std::uint16_t h, bool half) { return half ? (h & 0x7FFF) > 0x7C00 : (h & 0x7FFF) > 0x7F80; }

}  // namespace

TEST(GradCompression, NarrowAndWidenEqualTheReferenceConversions) {
  const std::vector<float> x = sweep();
  const nn::Device cpu{};
  for (const bool half : {false, true}) {
    const coll::DataType type = half ? coll::DataType::kFloat16 : coll::DataType::kBFloat16;
    for (const float scale : {1.0f, 1024.0f}) {
      std::vector<std::uint16_t> h(x.size());
      train::narrow_gradients(cpu, x.data(), h.data(), x.size(), type, scale);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float s = scale == 1.0f ? x[i] : x[i] * scale;
        const std::uint16_t want = half ? coll::float_to_half(s) : coll::float_to_bfloat16(s);
        if (std::isnan(s)) {
          ASSERT_TRUE(is_nan16(h[i], half)) << "NaN input " << i;
        }
        ASSERT_EQ(h[i], want) << (half ? "fp16" : "bf16") << " x " << scale << " of " << x[i];
      }
    }
    // Every 16-bit pattern widens as the reference does, divided by the scale.
    std::vector<std::uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    for (const float inv : {1.0f, 1.0f / 1024.0f}) {
      std::vector<float> w(all.size());
      train::widen_gradients(cpu, all.data(), w.data(), all.size(), type, inv);
      for (std::size_t i = 0; i < all.size(); ++i) {
        const float wide = half ? coll::half_to_float(all[i]) : coll::bfloat16_to_float(all[i]);
        const float want = inv == 1.0f ? wide : wide * inv;  // no multiply at 1: a signalling NaN stays as it is
        ASSERT_EQ(std::memcmp(&w[i], &want, 4), 0) << (half ? "fp16 " : "bf16 ") << std::hex << i << ": " << w[i]
                                                    << " vs " << want;
      }
    }
  }
}

TEST(GradCompression, LossScaleHalvesOnOverflowAndGrowsAfterGoodSteps) {
  train::LossScaler off;
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.scale(), 1.0);
  EXPECT_FALSE(off.can_skip());

  train::LossScaler s(8.0, 3);
  s.on_good_step();
  s.on_good_step();
  EXPECT_EQ(s.scale(), 8.0);
  s.on_overflow();  // halves and restarts the count
  EXPECT_EQ(s.scale(), 4.0);
  EXPECT_EQ(s.good_steps(), 0);
  for (int k = 0; k < 3; ++k) s.on_good_step();
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_EQ(s.good_steps(), 0);
  s.on_overflow();
  s.on_overflow();
  s.on_overflow();
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_FALSE(s.can_skip());  // at 1 an overflow is the gradients' own: the trainer stops
  EXPECT_THROW(s.on_overflow(), Error);

  train::LossScaler top(16777216.0, 1);
  top.on_good_step();
  EXPECT_EQ(top.scale(), 16777216.0);  // capped at 2^24

  s.restore(64.0, 2);
  EXPECT_EQ(s.scale(), 64.0);
  EXPECT_EQ(s.good_steps(), 2);
  EXPECT_THROW(s.restore(3.0, 0), Error);
  EXPECT_THROW(train::LossScaler(1000.0, 1), Error);
  EXPECT_THROW(train::LossScaler(2.0, 0), Error);
}
