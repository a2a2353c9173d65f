// test_host_collectives.cc — host backend: every op x dtype x reduction x in-place/out-of-place x counts
// {0, 1, 7, 1000}, plus 1000003-element cases, against a serial reference on each rank.
#include <gtest/gtest.h>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/half.h"

namespace mirror::coll::testing {
namespace {

std::unique_ptr<Communicator>& host_slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}

// Made once, on first use; destroyed when the test program ends, before MPI is finalised.
Communicator& host_comm() {
  if (!host_slot()) {
    CommOptions o;
    o.timeout = std::chrono::seconds(60);
    host_slot() = make_communicator(o);
  }
  return *host_slot();
}

class HostEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { host_slot().reset(); }
};
[[maybe_unused]] ::testing::Environment* const kHostEnv = ::testing::AddGlobalTestEnvironment(new HostEnvironment);

class HostByType : public ::testing::TestWithParam<DataType> {};

TEST_P(HostByType, AllreduceEveryOpCountAndPlacement) {
  for (ReduceOp op : all_ops())
    for (std::size_t count : small_counts())
      for (bool in_place : {false, true}) EXPECT_TRUE(check_allreduce(host_comm(), false, GetParam(), op, count, in_place));
}

TEST_P(HostByType, ReduceScatterEveryOpCountAndPlacement) {
  for (ReduceOp op : all_ops())
    for (std::size_t count : small_counts())
      for (bool in_place : {false, true})
        EXPECT_TRUE(check_reduce_scatter(host_comm(), false, GetParam(), op, count, in_place));
}

TEST_P(HostByType, BroadcastEveryRootAndCount) {
  for (int root = 0; root < host_comm().size(); ++root)
    for (std::size_t count : small_counts()) EXPECT_TRUE(check_broadcast(host_comm(), false, GetParam(), count, root));
}

TEST_P(HostByType, AllgatherEveryCountAndPlacement) {
  for (std::size_t count : small_counts())
    for (bool in_place : {false, true}) EXPECT_TRUE(check_allgather(host_comm(), false, GetParam(), count, in_place));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, HostByType, ::testing::ValuesIn(all_dtypes()),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Large, non-divisible counts: the ring path (above 64 KiB) and the large-broadcast path.
TEST(HostLarge, AllreduceRing) {
  auto& c = host_comm();
  EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat32, ReduceOp::kSum, kLargeCount, false));
  EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat32, ReduceOp::kSum, kLargeCount, true));
  EXPECT_TRUE(check_allreduce(c, false, DataType::kBFloat16, ReduceOp::kAvg, kLargeCount, true));
  EXPECT_TRUE(check_allreduce(c, false, DataType::kInt64, ReduceOp::kMax, kLargeCount, false));
  EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat16, ReduceOp::kProd, kLargeCount, false));
}

TEST(HostLarge, ReduceScatterAllgatherBroadcast) {
  auto& c = host_comm();
  const std::size_t per_rank = kLargeCount / static_cast<std::size_t>(c.size()) + 1;
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kFloat32, ReduceOp::kSum, per_rank, false));
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kInt32, ReduceOp::kMin, per_rank, true));
  // 16-bit: the pairwise exchange of 16-bit blocks with float32 sums (host_16bit.h)
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kBFloat16, ReduceOp::kAvg, per_rank, true));
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kFloat16, ReduceOp::kMax, per_rank, false));
  EXPECT_TRUE(check_allgather(c, false, DataType::kFloat64, per_rank, true));
  EXPECT_TRUE(check_broadcast(c, false, DataType::kFloat32, kLargeCount, c.size() - 1));
}

TEST(HostSemantics, IntegerAverageTruncatesTowardZero) {
  auto& c = host_comm();
  const int n = c.size(), r = c.rank();
  // Contributions -(r+1) and (r+1): sums -n(n+1)/2 and n(n+1)/2; C++ division truncates toward zero.
  const std::int64_t sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
  std::int32_t neg = -(r + 1), pos = r + 1;
  c.allreduce(&neg, &neg, 1, DataType::kInt32, ReduceOp::kAvg);
  c.allreduce(&pos, &pos, 1, DataType::kInt32, ReduceOp::kAvg);
  EXPECT_EQ(neg, static_cast<std::int32_t>(-sum / n));
  EXPECT_EQ(pos, static_cast<std::int32_t>(sum / n));
  if (n == 2) {
    EXPECT_EQ(neg, -1);  // -3 / 2
  }
}

TEST(HostSemantics, FloatAverageIsSumThenDivide) {
  auto& c = host_comm();
  const int n = c.size();
  float v = static_cast<float>(c.rank() + 1);
  c.allreduce(&v, &v, 1, DataType::kFloat32, ReduceOp::kAvg);
  EXPECT_EQ(v, static_cast<float>(n * (n + 1) / 2) / static_cast<float>(n));
}

TEST(HostSemantics, Float16AccumulatesInFloat32) {
  // 2048 + 1 + 1 + ... is not representable step by step in float16 (2049 rounds to 2048), but the
  // float32 accumulation adds every 1 before rounding once.
  auto& c = host_comm();
  const int n = c.size();
  if (n < 3) GTEST_SKIP() << "needs 3 or more ranks";
  std::uint16_t v = float_to_half(c.rank() == 0 ? 2048.0f : 1.0f);
  c.allreduce(&v, &v, 1, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(half_to_float(v), half_to_float(float_to_half(2048.0f + static_cast<float>(n - 1))));
}

TEST(HostSemantics, BarrierCompletes) {
  for (int i = 0; i < 3; ++i) host_comm().barrier();
  EXPECT_EQ(host_comm().backend().buffers, Buffers::kHost);
}

}  // namespace
}  // namespace mirror::coll::testing
