// test_shm_store_policy.cc — StagingStorePolicy (one process, no MPI): fixed modes never change; auto
// measures both choices first, follows the cheaper one, re-checks the other in exactly two calls of every
// kExploreEvery, ignores the first call after each change of choice, and follows a change of the cheaper
// choice in both directions. Costs are fed in directly, so each expected choice follows from the
// documented rule, not from the code's output.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "mirror/error.h"
#include "shm_store_policy.h"

namespace mirror::coll::detail {
namespace {

using std::chrono::nanoseconds;
constexpr std::size_t kBytes = std::size_t{16} << 20;
constexpr std::uint64_t kPeriod = StagingStorePolicy::kExploreEvery;

// Runs one call of the policy with the given cost per byte for each choice; returns what it chose.
bool run_call(StagingStorePolicy& p, double cached_ns_per_byte, double streaming_ns_per_byte,
              std::size_t bytes = kBytes) {
  const bool s = p.streaming(bytes);
  const double per_byte = s ? streaming_ns_per_byte : cached_ns_per_byte;
  p.record(s, bytes, nanoseconds(static_cast<std::int64_t>(per_byte * static_cast<double>(bytes))));
  return s;
}

// Choices made over `calls` calls at fixed costs: how many streamed.
int streamed_in(StagingStorePolicy& p, std::uint64_t calls, double cached, double streaming) {
  int n = 0;
  for (std::uint64_t i = 0; i < calls; ++i) n += run_call(p, cached, streaming) ? 1 : 0;
  return n;
}

TEST(StagingStorePolicy, FixedModesNeverChange) {
  StagingStorePolicy cached(ShmStaging::kCached), streaming(ShmStaging::kStreaming);
  for (int i = 0; i < 40; ++i) {
    EXPECT_FALSE(run_call(cached, 9.0, 1.0));  // plain stores although streaming is far cheaper
    EXPECT_TRUE(run_call(streaming, 1.0, 9.0));
  }
  EXPECT_EQ(cached.calls(false), 40u);
  EXPECT_EQ(streaming.calls(true), 40u);
}

TEST(StagingStorePolicy, AutoMeasuresBothThenKeepsTheCheaperAndExploresTwicePerPeriod) {
  StagingStorePolicy p(ShmStaging::kAuto);
  // Two calls each (the first of each is not counted), plain stores first.
  EXPECT_FALSE(run_call(p, 1.0, 1.4));
  EXPECT_FALSE(run_call(p, 1.0, 1.4));
  EXPECT_TRUE(run_call(p, 1.0, 1.4));
  EXPECT_TRUE(run_call(p, 1.0, 1.4));
  EXPECT_EQ(streamed_in(p, 4 * kPeriod, 1.0, 1.4), 8);  // two explorations per period, else plain
  StagingStorePolicy q(ShmStaging::kAuto);
  EXPECT_EQ(streamed_in(q, 4 + 4 * kPeriod, 1.4, 1.0), 2 + static_cast<int>(4 * kPeriod) - 8);  // mirrored
}

TEST(StagingStorePolicy, TheFirstCallAfterAChangeIsNotCounted) {
  StagingStorePolicy p(ShmStaging::kAuto);
  // The first plain call costs 50 (a cold segment): were it counted, streaming (1.4) would win.
  EXPECT_FALSE(run_call(p, 50.0, 1.4));
  EXPECT_FALSE(run_call(p, 1.0, 1.4));
  // The first streaming call is cheap (0.1) but not counted either; the second (1.4) is.
  EXPECT_TRUE(run_call(p, 1.0, 0.1));
  EXPECT_TRUE(run_call(p, 1.0, 1.4));
  EXPECT_FALSE(run_call(p, 1.0, 1.4));  // plain stores: 1.0 < 1.4
}

TEST(StagingStorePolicy, AutoFollowsASlowdownAndTheRecovery) {
  StagingStorePolicy p(ShmStaging::kAuto);
  streamed_in(p, 20, 1.0, 1.4);
  // Plain stores become 4x slower (the peer's core moved away): within two calls streaming takes over.
  int calls_until_streaming = 0;
  while (!run_call(p, 4.0, 1.4)) ASSERT_LE(++calls_until_streaming, 2);
  // While plain stores stay slow they are tried in exactly two calls per period and lose each time.
  EXPECT_EQ(streamed_in(p, 2 * kPeriod, 4.0, 1.4), static_cast<int>(2 * kPeriod) - 4);
  // Recovery: the next exploration measures plain stores at 1.0 and they win at once.
  int calls_until_cached = 0;
  while (run_call(p, 1.0, 1.4)) ASSERT_LE(++calls_until_cached, static_cast<int>(kPeriod));
  EXPECT_FALSE(run_call(p, 1.0, 1.4));  // the exploration's second call, the one that counts
  EXPECT_FALSE(run_call(p, 1.0, 1.4));  // ... and plain stores stay
}

TEST(StagingStorePolicy, OneSlowCallCountsHalf) {
  StagingStorePolicy p(ShmStaging::kAuto);
  for (int i = 0; i < 5; ++i) run_call(p, 1.0, 1.4);
  // One plain call at 1.6 ns/B (slower than streaming's 1.4): the estimate becomes (1.0 + 1.6) / 2 = 1.3,
  // still below 1.4, so plain stores stay; a second one makes it 1.45 and streaming takes over.
  EXPECT_FALSE(run_call(p, 1.6, 1.4));
  EXPECT_FALSE(run_call(p, 1.6, 1.4));
  EXPECT_TRUE(run_call(p, 1.6, 1.4));
}

TEST(StagingStorePolicy, SizeClassesAreMeasuredApart) {
  StagingStorePolicy p(ShmStaging::kAuto);
  const std::size_t small = std::size_t{4} << 20, large = std::size_t{64} << 20;
  // 4 MiB messages: plain stores cheaper (0.2 vs 0.3 ns/B, all in cache); 64 MiB: streaming cheaper
  // (0.8 vs 0.6). Every per-byte cost at 64 MiB exceeds both at 4 MiB, so one shared estimate would
  // pick whichever choice was last measured on the small messages.
  for (int i = 0; i < 8; ++i) {
    run_call(p, 0.2, 0.3, small);
    run_call(p, 0.8, 0.6, large);
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(p.streaming(small));
    run_call(p, 0.2, 0.3, small);
    EXPECT_TRUE(p.streaming(large));
    run_call(p, 0.8, 0.6, large);
  }
}

TEST(ShmStagingNames, ParseAndPrint) {
  for (ShmStaging s : {ShmStaging::kAuto, ShmStaging::kCached, ShmStaging::kStreaming})
    EXPECT_EQ(parse_shm_staging(to_string(s)), s);
  EXPECT_STREQ(to_string(ShmStaging::kStreaming), "streaming");
  EXPECT_THROW(parse_shm_staging("fast"), Error);
}

}  // namespace
}  // namespace mirror::coll::detail
