// test_shm_single_copy.cc — the shared-memory transport's copy modes for ordinary buffers
// (CommOptions::shm_copy: staged, single = cross-memory attach, auto), each forced on its own
// communicator: every op x dtype x reduction, in and out of place, at counts on both sides of the
// single-copy thresholds and past one staging buffer (sum and max), against the serial exact-sum reference; results
// bit-identical across the modes (and kAuto with its copy-path probe) on inputs whose sums round (float32 also against a serial
// rank-order float32 sum); which path each mode took (statistics); and the fallback when the start-up
// probe is refused on one rank (the shm_copy_refused_for_testing seam): every rank stages, results right.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "shm_communicator.h"

namespace mirror::coll::testing {
namespace {

using detail::kShmSingleAllreduceBytes;
using detail::kShmSingleBroadcastBytes;
using detail::kShmSingleGatherBytes;

// "staged", "single", "auto" (with kAuto's fixed bands: the copy-path probe off, so the paths below are
// known), "probed" (kAuto with its probe, as by default), or "refused" (single forced, probe refused on the
// last rank).
std::map<std::string, std::unique_ptr<Communicator>>& comms() {
  static std::map<std::string, std::unique_ptr<Communicator>> m;
  return m;
}

Communicator& comm(const std::string& mode) {
  auto& c = comms()[mode];
  if (!c) {
    CommOptions o;
    o.timeout = std::chrono::seconds(60);
    o.backend = parse_backend("host", "shm");
    o.shm_copy = parse_shm_copy(mode == "refused" ? "single" : mode == "probed" ? "auto" : mode);
    o.shm_copy_probe = mode == "probed";
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    o.shm_copy_refused_for_testing = mode == "refused" && rank == size - 1;
    c = make_communicator(o);
  }
  return *c;
}

class Environment : public ::testing::Environment {
 public:
  void TearDown() override { comms().clear(); }
};
[[maybe_unused]] ::testing::Environment* const kEnv = ::testing::AddGlobalTestEnvironment(new Environment);

// Element counts on both sides of `threshold_bytes` (per call) and tiny ones; with `large` (sum and max
// only, to keep the suite fast), also one past a staging buffer (several pieces and pipeline steps).
std::vector<std::size_t> counts_around(std::size_t threshold_bytes, std::size_t es, std::size_t divisor,
                                       bool large = true) {
  const std::size_t t = threshold_bytes / es / divisor;
  if (!large) return {1, 7, t - 1, t + 3};
  return {1, 7, t - 1, t + 3, std::size_t{600011} / divisor};
}
bool large_for(ReduceOp op) { return op == ReduceOp::kSum || op == ReduceOp::kMax; }

using Param = std::tuple<std::string, DataType>;
class SingleCopyMatrix : public ::testing::TestWithParam<Param> {
 protected:
  Communicator& c() { return comm(std::get<0>(GetParam())); }
  DataType type() const { return std::get<1>(GetParam()); }
  std::size_t es() const { return dtype_size(type()); }
};

TEST_P(SingleCopyMatrix, Allreduce) {
  for (ReduceOp op : all_ops())
    for (std::size_t count : counts_around(kShmSingleAllreduceBytes, es(), 1, large_for(op)))
      for (bool in_place : {false, true}) EXPECT_TRUE(check_allreduce(c(), false, type(), op, count, in_place));
}

TEST_P(SingleCopyMatrix, ReduceScatter) {
  const auto n = static_cast<std::size_t>(c().size());
  for (ReduceOp op : all_ops())
    for (std::size_t count : counts_around(kShmSingleGatherBytes, es(), n, large_for(op)))
      for (bool in_place : {false, true}) EXPECT_TRUE(check_reduce_scatter(c(), false, type(), op, count, in_place));
}

TEST_P(SingleCopyMatrix, Allgather) {
  const auto n = static_cast<std::size_t>(c().size());
  for (std::size_t count : counts_around(kShmSingleGatherBytes, es(), n))
    for (bool in_place : {false, true}) EXPECT_TRUE(check_allgather(c(), false, type(), count, in_place));
}

TEST_P(SingleCopyMatrix, BroadcastFromEveryRoot) {
  for (int root = 0; root < c().size(); ++root)
    for (std::size_t count : counts_around(kShmSingleBroadcastBytes, es(), 1))
      EXPECT_TRUE(check_broadcast(c(), false, type(), count, root));
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Modes, SingleCopyMatrix,
                         ::testing::Combine(::testing::Values(std::string("staged"), std::string("single"),
                                                              std::string("auto")),
                                            ::testing::ValuesIn(all_dtypes())),
                         param_name);

// Inputs whose sums round: a different float per rank and element.
float rounding_input(int rank, std::size_t i) {
  std::uint32_t h = static_cast<std::uint32_t>(i * 2654435761u) ^ static_cast<std::uint32_t>(rank * 40503 + 1);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return (static_cast<float>(h % 2000001) - 1000000.0f) / 977.0f;
}

std::vector<unsigned char> allreduce_bytes(Communicator& c, DataType t, ReduceOp op, std::size_t count, bool in_place) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = rounding_input(c.rank(), i);
  const std::size_t es = dtype_size(t);
  std::vector<unsigned char> send(count * es), recv(count * es, 0xee);
  for (std::size_t i = 0; i < count; ++i) put(send.data(), i, t, values[i]);
  if (in_place) recv = send;
  c.allreduce(in_place ? recv.data() : send.data(), recv.data(), count, t, op);
  return recv;
}

TEST(SingleCopy, BitIdenticalAcrossModesOnRoundingSums) {
  const int n = comm("staged").size();
  for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16})
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg})
      for (std::size_t count : {std::size_t{1000}, std::size_t{70001}, std::size_t{600011}})
        for (bool in_place : {false, true}) {
          const auto staged = allreduce_bytes(comm("staged"), t, op, count, in_place);
          for (const char* mode : {"single", "auto", "probed"}) {
            const auto other = allreduce_bytes(comm(mode), t, op, count, in_place);
            EXPECT_TRUE(other == staged) << mode << " differs from staged: " << to_string(t) << " " << to_string(op)
                                         << " count " << count << (in_place ? " in place" : "") << " np " << n;
          }
          if (t != DataType::kFloat32 || op != ReduceOp::kSum) continue;
          // The serial reference: float32 sums in rank order.
          std::vector<float> got(count);
          std::memcpy(got.data(), staged.data(), count * sizeof(float));
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i) {
            float s = rounding_input(0, i);
            for (int q = 1; q < n; ++q) s += rounding_input(q, i);
            wrong += std::memcmp(&s, &got[i], sizeof s) != 0;
          }
          EXPECT_EQ(wrong, 0u) << "count " << count;
        }
}

TEST(SingleCopy, EachModeTakesItsPath) {
  auto single_calls = [](Communicator& c) { return shm_staging_counts(c).single; };
  Communicator& staged = comm("staged");
  Communicator& single = comm("single");
  Communicator& autom = comm("auto");
  EXPECT_TRUE(shm_staging_counts(single).single_permitted) << "cross-memory attach refused on this machine?";
  // large: in the auto band at every rank count (bytes x ranks above the single-sync limit for n > 2).
  const std::size_t small = 64, large = (std::size_t{2} << 20) / sizeof(float);
  for (std::size_t count : {small, large}) {
    const auto s0 = single_calls(staged), s1 = single_calls(single), s2 = single_calls(autom);
    EXPECT_TRUE(check_allreduce(staged, false, DataType::kFloat32, ReduceOp::kSum, count, false));
    EXPECT_TRUE(check_allreduce(single, false, DataType::kFloat32, ReduceOp::kSum, count, false));
    EXPECT_TRUE(check_allreduce(autom, false, DataType::kFloat32, ReduceOp::kSum, count, false));
    EXPECT_EQ(single_calls(staged), s0);
    EXPECT_EQ(single_calls(single), s1 + 1);
    EXPECT_EQ(single_calls(autom), s2 + (count == large ? 1 : 0)) << "count " << count;
  }
  // From kShmStreamBytes on, auto takes single copy only when every rank is in place.
  const std::size_t huge = detail::kShmStreamBytes / sizeof(float);
  for (bool in_place : {false, true}) {
    const auto before = single_calls(autom);
    EXPECT_TRUE(check_allreduce(autom, false, DataType::kFloat32, ReduceOp::kSum, huge, in_place));
    EXPECT_EQ(single_calls(autom), before + (in_place ? 1 : 0)) << (in_place ? "in place" : "out of place");
  }
}

TEST(SingleCopy, RefusedProbeFallsBackToStagedOnEveryRank) {
  Communicator& c = comm("refused");
  EXPECT_FALSE(shm_staging_counts(c).single_permitted);
  EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat32, ReduceOp::kSum, kLargeCount, false));
  EXPECT_TRUE(check_broadcast(c, false, DataType::kInt32, 100000, 0));
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kFloat64, ReduceOp::kMin, 100003, true));
  EXPECT_TRUE(check_allgather(c, false, DataType::kBFloat16, 100003, false));
  EXPECT_EQ(shm_staging_counts(c).single, 0u);
}

TEST(SingleCopy, ModeNames) {
  for (ShmCopy m : {ShmCopy::kAuto, ShmCopy::kStaged, ShmCopy::kSingle}) EXPECT_EQ(parse_shm_copy(to_string(m)), m);
  try {
    parse_shm_copy("zero");
    ADD_FAILURE() << "parse_shm_copy accepted 'zero'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected auto, staged or single"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mirror::coll::testing
