// test_shm_collectives.cc — the host backend's transports forced explicitly (shm: shared memory, mpi:
// MPI point-to-point): every op x dtype x reduction x in-place/out-of-place x counts {0, 1, 7, 1000},
// broadcast from every root, counts around the 64 KiB small-message threshold and odd counts larger than
// one staging buffer (pipelined steps), each against a serial reference on every rank; mixed sizes many
// times round the staging buffers' lanes; messages of several buffers (2 ranks: buffer by buffer), in place
// bit for bit as out of place (pipelined) and a serial sum. Also: auto picks
// shm when all ranks share the node, and no /dev/shm entry of this job outlives make_communicator.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/half.h"
#include "mirror/error.h"
#include "shm_communicator.h"

namespace mirror::coll::testing {
namespace {

std::map<std::string, std::unique_ptr<Communicator>>& comms() {
  static std::map<std::string, std::unique_ptr<Communicator>> m;
  return m;
}

// Made once per transport, on first use (every rank reaches the same first use); destroyed before MPI ends.
Communicator& comm(std::string t) {
  auto& c = comms()[t];
  if (!c) {
    CommOptions o;
    o.timeout = std::chrono::seconds(60);
    o.backend = parse_backend("host", t);
    c = make_communicator(o);
  }
  return *c;
}

class ShmEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { comms().clear(); }
};
[[maybe_unused]] ::testing::Environment* const kShmEnv = ::testing::AddGlobalTestEnvironment(new ShmEnvironment);

using Param = std::tuple<std::string, DataType>;
class ShmMatrix : public ::testing::TestWithParam<Param> {
 protected:
  Communicator& c() { return comm(std::get<0>(GetParam())); }
  DataType type() const { return std::get<1>(GetParam()); }
};

TEST_P(ShmMatrix, AllreduceEveryOpCountAndPlacement) {
  for (ReduceOp op : all_ops())
    for (std::size_t count : small_counts())
      for (bool in_place : {false, true}) EXPECT_TRUE(check_allreduce(c(), false, type(), op, count, in_place));
}

TEST_P(ShmMatrix, ReduceScatterEveryOpCountAndPlacement) {
  for (ReduceOp op : all_ops())
    for (std::size_t count : small_counts())
      for (bool in_place : {false, true}) EXPECT_TRUE(check_reduce_scatter(c(), false, type(), op, count, in_place));
}

TEST_P(ShmMatrix, BroadcastEveryRootAndCount) {
  for (int root = 0; root < c().size(); ++root)
    for (std::size_t count : small_counts()) EXPECT_TRUE(check_broadcast(c(), false, type(), count, root));
}

TEST_P(ShmMatrix, AllgatherEveryCountAndPlacement) {
  for (std::size_t count : small_counts())
    for (bool in_place : {false, true}) EXPECT_TRUE(check_allgather(c(), false, type(), count, in_place));
}

// Both sides of the single-sync thresholds (64 KiB; 4 MiB read per rank), and an odd count above one
// staging buffer.
TEST_P(ShmMatrix, AllreduceAroundThresholdsAndLarge) {
  const std::size_t es = dtype_size(type());
  const std::size_t read_limit = (std::size_t{4} << 20) / static_cast<std::size_t>(c().size()) / es;
  for (std::size_t count : {65536 / es, 65536 / es + 1, read_limit, read_limit + 1, std::size_t{1000003}}) {
    EXPECT_TRUE(check_allreduce(c(), false, type(), ReduceOp::kSum, count, false));
    EXPECT_TRUE(check_allreduce(c(), false, type(), ReduceOp::kMax, count, true));
  }
  EXPECT_TRUE(check_allreduce(c(), false, type(), ReduceOp::kAvg, 300007, true));
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Transports, ShmMatrix,
                         ::testing::Combine(::testing::Values(std::string("shm"), std::string("mpi")),
                                            ::testing::ValuesIn(all_dtypes())),
                         param_name);

class ShmLarge : public ::testing::TestWithParam<std::string> {};

TEST_P(ShmLarge, ReduceScatterAllgatherBroadcastPipelined) {
  auto& c = comm(GetParam());
  const std::size_t per_rank = 300007;  // several staging-buffer steps per rank block
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kFloat32, ReduceOp::kSum, per_rank, false));
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kInt32, ReduceOp::kMin, per_rank, true));
  EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kBFloat16, ReduceOp::kAvg, per_rank, true));
  EXPECT_TRUE(check_allgather(c, false, DataType::kFloat64, per_rank, true));
  EXPECT_TRUE(check_allgather(c, false, DataType::kFloat16, per_rank, false));
  EXPECT_TRUE(check_broadcast(c, false, DataType::kFloat32, 1000003, c.size() - 1));
}

// 16-bit messages large enough for the pipelined path on every rank count (several staging buffers).
TEST_P(ShmLarge, PipelinedAllreduce16Bit) {
  auto& c = comm(GetParam());
  EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat16, ReduceOp::kSum, 2500009, false));
  EXPECT_TRUE(check_allreduce(c, false, DataType::kBFloat16, ReduceOp::kAvg, 2500009, true));
}

TEST_P(ShmLarge, Float16AccumulatesInFloat32) {
  auto& c = comm(GetParam());
  const int n = c.size();
  if (n < 3) GTEST_SKIP() << "needs 3 or more ranks";
  // 2048 + 1 + 1 rounds to 2048 step by step in float16; float32 accumulation rounds once.
  std::vector<std::uint16_t> v(40000, float_to_half(c.rank() == 0 ? 2048.0f : 1.0f));  // large path too
  c.allreduce(v.data(), v.data(), 1, DataType::kFloat16, ReduceOp::kSum);
  c.allreduce(v.data() + 1, v.data() + 1, v.size() - 1, DataType::kFloat16, ReduceOp::kSum);
  const float expected = half_to_float(float_to_half(2048.0f + static_cast<float>(n - 1)));
  EXPECT_EQ(half_to_float(v[0]), expected);
  EXPECT_EQ(half_to_float(v.back()), expected);
}

TEST_P(ShmLarge, IntegerAverageTruncatesTowardZero) {
  auto& c = comm(GetParam());
  const int n = c.size(), r = c.rank();
  const std::int64_t sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
  std::int64_t neg = -(r + 1), pos = r + 1;
  c.allreduce(&neg, &neg, 1, DataType::kInt64, ReduceOp::kAvg);
  c.allreduce(&pos, &pos, 1, DataType::kInt64, ReduceOp::kAvg);
  EXPECT_EQ(neg, -sum / n);
  EXPECT_EQ(pos, sum / n);
}

INSTANTIATE_TEST_SUITE_P(Transports, ShmLarge, ::testing::Values(std::string("shm"), std::string("mpi")),
                         [](const auto& info) { return info.param; });

// A shared-memory communicator of its own with every size through the staging buffers (no single copy).
std::unique_ptr<Communicator> staged_shm(ShmStaging staging = ShmStaging::kAuto) {
  CommOptions o;
  o.timeout = std::chrono::seconds(60);
  o.backend = parse_backend("host", "shm");
  o.shm_staging = staging;
  o.shm_copy = ShmCopy::kStaged;
  return make_communicator(o);
}

// Large allreduces with the staging stores forced each way: kAuto switches between the two while a job
// runs, so both must give exact results (pipelined sizes for every dtype, and the streamed-output size;
// staged copies forced).
class ShmStagingModes : public ::testing::TestWithParam<ShmStaging> {};

TEST_P(ShmStagingModes, PipelinedAllreduceExact) {
  auto c = staged_shm(GetParam());  // the pipelined path (auto takes single copy for ordinary buffers)
  for (DataType t : all_dtypes()) {
    // Out of place from kShmStreamBytes: pipelined at 2 ranks too (below, and in place, 2 ranks go by buffers).
    EXPECT_TRUE(check_allreduce(*c, false, t, ReduceOp::kSum, detail::kShmStreamBytes / dtype_size(t) + 3, false));
    EXPECT_TRUE(check_allreduce(*c, false, t, ReduceOp::kMax, 1000003, true));
  }
  const std::size_t streamed_output = (std::size_t{16} << 20) / 4 + 7;  // float32, >= 16 MiB out of place
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, streamed_output, false));
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kAvg, streamed_output, true));
  const ShmStagingCounts n = shm_staging_counts(*c);
  const bool streaming = GetParam() == ShmStaging::kStreaming;
  EXPECT_GE(streaming ? n.streaming : n.cached, 2u);
  EXPECT_EQ(streaming ? n.cached : n.streaming, 0u);
}

INSTANTIATE_TEST_SUITE_P(Stores, ShmStagingModes, ::testing::Values(ShmStaging::kCached, ShmStaging::kStreaming),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Lanes (shm_communicator.h): staged collectives of kShmLaneMinBytes..kShmLaneMaxBytes write each use of a
// staging buffer at the next lane of their size. Mixed sizes and ops, in and out of the lane band, many
// times round every buffer (a 64 KiB message's 32 lanes a buffer go round after 64 uses), each call against
// the serial reference: a reader looking at another lane than its writer used, or a lane past the buffer's
// end, shows as wrong results.
TEST(ShmLanes, MixedSizesGoRoundTheBuffersExact) {
  auto c = staged_shm();
  constexpr std::size_t kFloats = detail::kShmLaneMinBytes / 4, kMaxFloats = detail::kShmLaneMaxBytes / 4;
  const std::size_t n = static_cast<std::size_t>(c->size());
  // Below the band, its ends, odd counts inside it (lanes rounded up to kShmLaneAlign), above it.
  const std::vector<std::size_t> counts{kFloats - 1, kFloats, 16411, kMaxFloats / 4 + 3, kMaxFloats, kMaxFloats + 1};
  for (int round = 0; round < 70; ++round) {
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const std::size_t count = counts[(i + static_cast<std::size_t>(round)) % counts.size()];
      const bool in_place = (round + static_cast<int>(i)) % 2 == 0;
      ASSERT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, count, in_place)) << round;
      if (round % 5 != 0) continue;
      ASSERT_TRUE(check_broadcast(*c, false, DataType::kInt32, count, round % c->size())) << round;
      ASSERT_TRUE(check_allgather(*c, false, DataType::kFloat32, std::max<std::size_t>(1, count / n), in_place));
      ASSERT_TRUE(check_reduce_scatter(*c, false, DataType::kFloat32, ReduceOp::kMax,
                                       std::max<std::size_t>(1, count / n), !in_place));
    }
  }
}

// Allreduces larger than a staging buffer: at 2 ranks the single-sync path buffer by buffer
// (allreduce_by_buffers; out of place with streamed output) below kShmStreamBytes and in place above it,
// elsewhere the pipelined path. Every dtype and a few ops, in and out of place, at one buffer and one
// element, two buffers exactly and two and a half, against the serial reference; and on float32 sums that
// round, above kShmStreamBytes, in place (by buffers at 2 ranks) bit for bit the same as out of place (the
// pipelined path) and as a serial rank-order float32 sum.
TEST(ShmByBuffers, ExactAndBitIdenticalToPipelined) {
  auto c = staged_shm();
  for (DataType t : all_dtypes()) {
    const std::size_t per_buffer = detail::kShmSlotBytes / dtype_size(t);
    for (std::size_t count : {per_buffer + 1, 2 * per_buffer, 5 * per_buffer / 2 + 3})
      for (bool in_place : {true, false}) {
        EXPECT_TRUE(check_allreduce(*c, false, t, ReduceOp::kSum, count, in_place)) << to_string(t) << " " << count;
        EXPECT_TRUE(check_allreduce(*c, false, t, ReduceOp::kMax, count, in_place)) << to_string(t) << " " << count;
      }
    EXPECT_TRUE(check_allreduce(*c, false, t, ReduceOp::kAvg, per_buffer + 7, true)) << to_string(t);
  }
  const std::size_t count = detail::kShmStreamBytes / sizeof(float) + 11;
  auto value = [](int rank, std::size_t i) {
    const std::size_t mixed = (i * 2654435761u + static_cast<std::size_t>(rank) * 40503u) % 1000003;
    return static_cast<float>(static_cast<double>(mixed) / 7.0 - 60000.0);
  };
  std::vector<float> in_place(count), out(count), send(count);
  for (std::size_t i = 0; i < count; ++i) in_place[i] = send[i] = value(c->rank(), i);
  c->allreduce(in_place.data(), in_place.data(), count, DataType::kFloat32, ReduceOp::kSum);
  c->allreduce(send.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum);
  std::size_t differ_out = 0, differ_serial = 0;
  for (std::size_t i = 0; i < count; ++i) {
    float serial = value(0, i);
    for (int q = 1; q < c->size(); ++q) serial += value(q, i);
    differ_out += std::memcmp(&in_place[i], &out[i], sizeof(float)) != 0;
    differ_serial += std::memcmp(&in_place[i], &serial, sizeof(float)) != 0;
  }
  EXPECT_EQ(differ_out, 0u) << "in place against out of place";
  EXPECT_EQ(differ_serial, 0u) << "in place against the serial rank-order sum";
}

TEST(ShmSelection, ForcedAndAutomaticTransports) {
  EXPECT_STREQ(transport_name(comm(std::string("shm"))), "shm");
  EXPECT_STREQ(transport_name(comm(std::string("mpi"))), "mpi");
  const ShmStagingCounts none = shm_staging_counts(comm(std::string("mpi")));
  EXPECT_EQ(none.cached + none.streaming, 0u);
  // Under mpirun on one machine every rank shares the node: auto must pick shared memory.
  CommOptions o;
  auto c = make_communicator(o);
  EXPECT_STREQ(transport_name(*c), "shm");
  EXPECT_EQ(c->backend().buffers, Buffers::kHost);
  EXPECT_TRUE(c->selection_note().empty()) << c->selection_note();
  // The row's statistics column names exactly what statistics() reports, in order.
  for (Communicator* x : {c.get(), &comm(std::string("mpi"))}) {
    std::vector<std::string> reported, declared(x->backend().statistics.begin(), x->backend().statistics.end());
    for (const Statistic& s : x->statistics()) reported.push_back(s.name);
    EXPECT_EQ(reported, declared) << x->backend().name;
  }
  EXPECT_STREQ(parse_backend("host", "mpi")->name, "mpi");
  EXPECT_STREQ(parse_backend("host", "hierarchical")->name, "hierarchical");
  EXPECT_EQ(parse_backend("host", "auto"), nullptr);
  EXPECT_THROW(parse_backend("host", "tcp"), Error);
}

TEST(ShmSegment, NothingLeftInDevShm) {
  CommOptions o;
  o.backend = parse_backend("host", "shm");
  auto c = make_communicator(o);
  // Every rank learns every rank's pid (rank 0's names the segment) through the new communicator.
  const std::int64_t mine = ::getpid();
  std::vector<std::int64_t> pids(static_cast<std::size_t>(c->size()));
  c->allgather(&mine, pids.data(), 1, DataType::kInt64);
  EXPECT_EQ(pids[static_cast<std::size_t>(c->rank())], mine);
  // While the communicator is alive and working, the name is already gone.
  for (std::int64_t pid : pids) {
    EXPECT_TRUE(shm_entries_of(pid).empty()) << "left in /dev/shm: " << shm_entries_of(pid)[0];
  }
  float x = 1;
  c->allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(x, static_cast<float>(c->size()));
  c.reset();
  for (std::int64_t pid : pids) EXPECT_TRUE(shm_entries_of(pid).empty());
}

}  // namespace
}  // namespace mirror::coll::testing
