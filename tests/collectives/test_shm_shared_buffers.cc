// test_shm_shared_buffers.cc — Communicator::allocate_shared and the direct allreduce between shared
// buffers (and the direct reduce_scatter and allgather): every dtype x reduction x in-place/out-of-place at counts on both sides of the 64 KiB
// threshold and not divisible by the rank count, buffers at an offset into a shared buffer, each against
// a serial reference on every rank (exact-sum inputs, zero tolerance); the direct path is taken exactly
// when every rank's buffers are shared and alive everywhere (counted), and falls back to the staging path
// otherwise with the same results (at 2 ranks by buffers, not pipelined, as without shared buffers); the MPI transport hands out ordinary memory that works the same;
// mismatched sizes and more than 64 live buffers fail on every rank; mismatched counts on shared buffers
// fail on every rank before any rank touches another's buffer, and a rank that skips such an allreduce
// makes the others time out naming it; a rank that cannot create its part (file size limit) makes
// allocate_shared fail on every rank, naming that rank and the system call, with nothing left in /dev/shm
// and the communicator still usable; no /dev/shm name is left behind; a buffer outlives its
// communicator.
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll::testing {
namespace {

std::unique_ptr<Communicator> make(std::string t) {
  CommOptions o;
  o.timeout = std::chrono::seconds(60);
  o.backend = parse_backend("host", t);
  return make_communicator(o);
}

// Runs allreduce(send, recv) on buffers the caller placed (recv == send: in place) and checks every
// element against the serial reference.
::testing::AssertionResult allreduce_exact(Communicator& c, void* send, void* recv, std::size_t count,
                                           DataType t, ReduceOp op) {
  const int r = c.rank(), n = c.size();
  for (std::size_t i = 0; i < count; ++i) put(send, i, t, test_input(op, r, i, n));
  if (recv != send) std::memset(recv, 0, count * dtype_size(t));
  c.allreduce(send, recv, count, t, op);
  for (std::size_t i = 0; i < count; ++i) {
    const double want = test_reference(op, i, n);
    if (get(recv, i, t) != want) {
      return ::testing::AssertionFailure() << to_string(t) << " " << to_string(op) << " count " << count
                                           << (recv == send ? " in place" : " out of place") << ": element " << i
                                           << " is " << get(recv, i, t) << ", expected " << want << " (rank " << r
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// reduce_scatter of `count` per rank from `send` (size() * count elements) into `recv` (in place when
// recv == send + rank * count), checked against the serial reference; in place, the other blocks of
// send must be untouched.
::testing::AssertionResult reduce_scatter_exact(Communicator& c, void* send, void* recv, std::size_t count,
                                                DataType t, ReduceOp op) {
  const int r = c.rank(), n = c.size();
  const std::size_t es = dtype_size(t), total = count * static_cast<std::size_t>(n), mine = r * count;
  for (std::size_t j = 0; j < total; ++j) put(send, j, t, test_input(op, r, j, n));
  const bool in_place = recv == static_cast<unsigned char*>(send) + mine * es;
  if (!in_place) std::memset(recv, 0, count * es);
  c.reduce_scatter(send, recv, count, t, op);
  for (std::size_t j = 0; j < total; ++j) {
    const bool own = j >= mine && j < mine + count;
    if (!own && !in_place) continue;
    const double got = own ? get(recv, j - mine, t) : get(send, j, t);
    const double want = own ? test_reference(op, j, n) : test_input(op, r, j, n);
    if (got != want) {
      return ::testing::AssertionFailure() << "reduce_scatter " << to_string(t) << " " << to_string(op) << " count "
                                           << count << (in_place ? " in place" : " out of place") << ": element "
                                           << j << " is " << got << ", expected " << want << " (rank " << r << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// allgather of `count` per rank from `send` into `recv` (size() * count; in place when send == recv +
// rank * count), checked element by element.
::testing::AssertionResult allgather_exact(Communicator& c, void* send, void* recv, std::size_t count, DataType t) {
  const int r = c.rank(), n = c.size();
  const std::size_t es = dtype_size(t), total = count * static_cast<std::size_t>(n);
  const bool in_place = send == static_cast<unsigned char*>(recv) + r * count * es;
  if (!in_place) std::memset(recv, 0xff, total * es);
  for (std::size_t i = 0; i < count; ++i) put(send, i, t, test_input(ReduceOp::kSum, r, i + 3, n));
  c.allgather(send, recv, count, t);
  for (std::size_t j = 0; j < total; ++j) {
    const double want = test_input(ReduceOp::kSum, static_cast<int>(j / count), j % count + 3, n);
    if (get(recv, j, t) != want) {
      return ::testing::AssertionFailure() << "allgather " << to_string(t) << " count " << count
                                           << (in_place ? " in place" : " out of place") << ": element " << j
                                           << " is " << get(recv, j, t) << ", expected " << want << " (rank " << r
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class SharedBuffers : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedBuffers, DirectReduceScatterAndAllgatherExact) {
  auto c = make(GetParam());
  const int n = c->size();
  const std::size_t largest = kLargeCount * 8 + 256;
  SharedBuffer a = c->allocate_shared(largest), b = c->allocate_shared(largest);
  const bool shm = std::string(transport_name(*c)) == "shm";
  const std::uint64_t before = shm_staging_counts(*c).direct;
  std::uint64_t expected_direct = 0;
  for (DataType t : all_dtypes()) {
    const std::size_t es = dtype_size(t);
    // Per-rank blocks: small; just over 64 KiB in all (not a multiple of 64 bytes); many pieces.
    for (std::size_t count : {std::size_t{7}, 64 * 1024 / es / n + 1, kLargeCount / n + 3}) {
      const bool direct = shm && n > 1 && count * es * n > 64 * 1024;
      auto* own_block_of_a = a.as<unsigned char>() + c->rank() * count * es;
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kProd}) {
        EXPECT_TRUE(reduce_scatter_exact(*c, a.data(), b.data(), count, t, op));
        EXPECT_TRUE(reduce_scatter_exact(*c, a.data(), own_block_of_a, count, t, op));
        expected_direct += direct ? 2 : 0;
      }
      EXPECT_TRUE(allgather_exact(*c, b.data(), a.data(), count, t));
      EXPECT_TRUE(allgather_exact(*c, own_block_of_a, a.data(), count, t));
      expected_direct += direct ? 2 : 0;
    }
  }
  EXPECT_EQ(shm_staging_counts(*c).direct - before, expected_direct);
  // One rank's buffers ordinary: everybody takes the staging path, with the same results.
  const std::size_t count = kLargeCount / n + 3;
  std::vector<float> own_send(count * n), own_recv(count * n);
  const bool ordinary = c->rank() == n - 1;
  void* send = ordinary ? own_send.data() : a.data();
  void* recv = ordinary ? own_recv.data() : b.data();
  EXPECT_TRUE(reduce_scatter_exact(*c, send, recv, count, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(allgather_exact(*c, send, recv, count, DataType::kFloat32));
  EXPECT_EQ(shm_staging_counts(*c).direct - before, expected_direct);
}

TEST_P(SharedBuffers, DirectAllreduceExactEveryTypeOpAndPlacement) {
  auto c = make(GetParam());
  const std::size_t largest = kLargeCount * 8 + 256;
  SharedBuffer a = c->allocate_shared(largest), b = c->allocate_shared(largest);
  ASSERT_GE(a.bytes(), largest);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
  const bool shm = std::string(transport_name(*c)) == "shm";
  std::uint64_t expected_direct = 0;
  for (DataType t : all_dtypes()) {
    const std::size_t es = dtype_size(t);
    // 16385 float32 is just above 64 KiB; 7 is on the small path; kLargeCount spans many pieces.
    for (std::size_t count : {std::size_t{7}, 64 * 1024 / es + 1, kLargeCount}) {
      const bool direct = shm && c->size() > 1 && count * es > 64 * 1024;
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kProd}) {
        EXPECT_TRUE(allreduce_exact(*c, a.data(), b.data(), count, t, op));
        EXPECT_TRUE(allreduce_exact(*c, b.data(), b.data(), count, t, op));
        expected_direct += direct ? 2 : 0;
      }
    }
  }
  // At an offset into the shared buffer (different on every rank).
  auto* base = a.as<unsigned char>() + 64 * (c->rank() + 1);
  EXPECT_TRUE(allreduce_exact(*c, base, b.as<unsigned char>() + 8, kLargeCount, DataType::kFloat32, ReduceOp::kSum));
  expected_direct += shm && c->size() > 1 ? 1 : 0;
  EXPECT_EQ(shm_staging_counts(*c).direct, expected_direct);
}

// The direct reduce_scatter evicts the lines it read from the other ranks exactly when the peer-store
// policies say cross-core invalidation is expensive (fixed here with CommOptions::shm_staging), and the
// results are the same either way.
TEST(SharedBufferDirect, ReduceScatterEvictsWhatItReadOnlyWhenStreamingWins) {
  for (ShmStaging staging : {ShmStaging::kStreaming, ShmStaging::kCached}) {
    CommOptions o;
    o.timeout = std::chrono::seconds(60);
    o.backend = parse_backend("host", "shm");
    o.shm_staging = staging;
    auto c = make_communicator(o);
    const std::size_t count = kLargeCount / c->size() + 3;
    SharedBuffer a = c->allocate_shared(count * c->size() * 4), b = c->allocate_shared(count * 4);
    EXPECT_TRUE(reduce_scatter_exact(*c, a.data(), b.data(), count, DataType::kFloat32, ReduceOp::kSum));
    EXPECT_TRUE(reduce_scatter_exact(*c, a.data(), a.as<float>() + c->rank() * count, count, DataType::kFloat32,
                                     ReduceOp::kAvg));
    const bool evicts = staging == ShmStaging::kStreaming && c->size() > 1;
    EXPECT_EQ(shm_staging_counts(*c).evicted, evicts ? 2u : 0u) << to_string(staging);
    EXPECT_EQ(shm_staging_counts(*c).direct, c->size() > 1 ? 2u : 0u) << to_string(staging);
  }
}

TEST_P(SharedBuffers, OrdinaryBuffersOnOneRankFallBackToStaging) {
  auto c = make(GetParam());
  const std::size_t count = kLargeCount, bytes = count * 4;
  SharedBuffer a = c->allocate_shared(bytes), b = c->allocate_shared(bytes);
  std::vector<float> own_send(count), own_recv(count);
  const bool ordinary = c->rank() == c->size() - 1;  // the last rank (rank 0 alone when size 1)
  void* send = ordinary ? own_send.data() : a.data();
  void* recv = ordinary ? own_recv.data() : b.data();
  const ShmStagingCounts before = shm_staging_counts(*c);
  EXPECT_TRUE(allreduce_exact(*c, send, recv, count, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(allreduce_exact(*c, recv, recv, count, DataType::kFloat32, ReduceOp::kMax));
  const ShmStagingCounts after = shm_staging_counts(*c);
  EXPECT_EQ(after.direct, before.direct);
  // At 2 ranks these 4 MB go by buffers (or single copy), as without shared buffers: not the pipelined path,
  // which counts its calls as cached or streaming.
  if (c->size() == 2 && GetParam() == "shm") {
    EXPECT_EQ(after.cached + after.streaming, before.cached + before.streaming);
  }
}

TEST_P(SharedBuffers, BufferReleasedOnAnotherRankFallsBack) {
  auto c = make(GetParam());
  const std::size_t count = kLargeCount, bytes = count * 4;
  SharedBuffer a = c->allocate_shared(bytes), b = c->allocate_shared(bytes), spare = c->allocate_shared(bytes);
  // Rank 0 sends from `a`; every other rank has released its `a` and sends from `spare`: rank 0's send
  // is not reachable from them, so nobody may take the direct path.
  if (c->rank() != 0) a = SharedBuffer();
  void* send = c->rank() == 0 ? a.data() : spare.data();
  const std::uint64_t before = shm_staging_counts(*c).direct;
  EXPECT_TRUE(allreduce_exact(*c, send, b.data(), count, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_EQ(shm_staging_counts(*c).direct, before);
  const bool shm = std::string(transport_name(*c)) == "shm";
  // Once every rank sends from `spare`, the direct path is back.
  EXPECT_TRUE(allreduce_exact(*c, spare.data(), b.data(), count, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_EQ(shm_staging_counts(*c).direct, before + (shm && c->size() > 1 ? 1 : 0));
}

TEST_P(SharedBuffers, MismatchedSizesFailOnEveryRank) {
  auto c = make(GetParam());
  if (c->size() == 1) GTEST_SKIP() << "needs two ranks to disagree";
  try {
    c->allocate_shared(4096 * static_cast<std::size_t>(c->rank() + 1));
    ADD_FAILURE() << "mismatched sizes were accepted on rank " << c->rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("same number of bytes"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("rank 1: 8192"), std::string::npos) << e.message();
  }
  // The communicator is still usable.
  float x = 1;
  c->allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(x, static_cast<float>(c->size()));
}

TEST(SharedBufferDirect, MismatchedCountsFailEverywhere) {
  auto c = make(std::string("shm"));
  if (c->size() == 1) GTEST_SKIP() << "needs two ranks to disagree";
  const std::size_t count = 1 << 20;
  SharedBuffer a = c->allocate_shared(count * 4), b = c->allocate_shared(count * 4);
  try {
    c->allreduce(a.data(), b.data(), count - 64 * static_cast<std::size_t>(c->rank()), DataType::kFloat32,
                 ReduceOp::kSum);
    ADD_FAILURE() << "mismatched counts were accepted on rank " << c->rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("mismatched collectives"), std::string::npos) << e.message();
  }
  EXPECT_EQ(shm_staging_counts(*c).direct, 0u);
}

TEST(SharedBufferDirect, SkippedAllreduceTimesOutNamingTheRank) {
  CommOptions o;
  o.timeout = std::chrono::milliseconds(1500);
  o.backend = parse_backend("host", "shm");
  auto c = make_communicator(o);
  if (c->size() == 1) GTEST_SKIP() << "needs a rank to skip";
  const std::size_t count = 1 << 18;
  SharedBuffer a = c->allocate_shared(count * 4);
  EXPECT_TRUE(allreduce_exact(*c, a.data(), a.data(), count, DataType::kFloat32, ReduceOp::kSum));
  if (c->rank() == 0) return;  // rank 0 skips the next one
  try {
    c->allreduce(a.data(), a.data(), count, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "allreduce without rank 0 did not time out";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout);
    EXPECT_NE(e.message().find("did not arrive: rank 0"), std::string::npos) << e.message();
  }
}

TEST(SharedBufferSlots, SixtyFourLiveThenReuse) {
  auto c = make(std::string("shm"));
  std::vector<SharedBuffer> live;
  for (int i = 0; i < 64; ++i) live.push_back(c->allocate_shared(4096));
  try {
    c->allocate_shared(4096);
    ADD_FAILURE() << "a 65th live shared buffer was handed out";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("64 shared buffers"), std::string::npos) << e.message();
  }
  live.erase(live.begin() + 10);
  live.push_back(c->allocate_shared(4096));
  // Released and made again many times: slots are reused, nothing runs out.
  for (int i = 0; i < 200; ++i) {
    live.back() = SharedBuffer();  // released first: all 64 slots are taken again by the next one
    live.back() = c->allocate_shared(4096);
  }
  live.clear();
  // A large buffer after all that still takes part in an exact allreduce.
  SharedBuffer big = c->allocate_shared(kLargeCount * 4);
  EXPECT_TRUE(allreduce_exact(*c, big.data(), big.data(), kLargeCount, DataType::kFloat32, ReduceOp::kSum));
}

TEST(SharedBufferFailure, OneRankCannotCreateItsPartFailsEverywhere) {
  auto c = make(std::string("shm"));
  const int failing = c->size() - 1;
  const std::int64_t mine = ::getpid();
  std::vector<std::int64_t> pids(static_cast<std::size_t>(c->size()));
  c->allgather(&mine, pids.data(), 1, DataType::kInt64);
  // The last rank may not grow a file past 64 KiB (ftruncate then fails with EFBIG; SIGXFSZ ignored).
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  if (c->rank() == failing) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = 64 * 1024;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  }
  try {
    c->allocate_shared(1 << 20);
    ADD_FAILURE() << "allocate_shared succeeded although rank " << failing << " cannot create its part";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.message().find("rank " + std::to_string(failing) + ": ftruncate of its part: File too large"),
              std::string::npos)
        << e.message();
  }
  if (c->rank() == failing) {
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, SIG_DFL);
  }
  c->barrier();
  for (std::int64_t pid : pids) EXPECT_TRUE(shm_entries_of(pid).empty()) << "left in /dev/shm: " << shm_entries_of(pid)[0];
  // Still usable, shared buffers included.
  SharedBuffer a = c->allocate_shared(kLargeCount * 4);
  EXPECT_TRUE(allreduce_exact(*c, a.data(), a.data(), kLargeCount, DataType::kFloat32, ReduceOp::kSum));
}

TEST(SharedBufferLifetime, NoNameLeftAndBufferOutlivesCommunicator) {
  auto c = make(std::string("shm"));
  const std::int64_t mine = ::getpid();
  std::vector<std::int64_t> pids(static_cast<std::size_t>(c->size()));
  c->allgather(&mine, pids.data(), 1, DataType::kInt64);
  SharedBuffer a = c->allocate_shared(1 << 20);
  c->barrier();  // each rank unlinks its own part's name before its allocate_shared returns
  for (std::int64_t pid : pids) EXPECT_TRUE(shm_entries_of(pid).empty()) << "left in /dev/shm: " << shm_entries_of(pid)[0];
  EXPECT_TRUE(allreduce_exact(*c, a.data(), a.data(), (1 << 20) / 4, DataType::kFloat32, ReduceOp::kSum));
  c.reset();
  // The memory is still this rank's to use.
  auto* f = a.as<float>();
  f[0] = 42.0f;
  f[(1 << 20) / 4 - 1] = 7.0f;
  EXPECT_EQ(f[0] + f[(1 << 20) / 4 - 1], 49.0f);
  EXPECT_EQ(SharedBuffer().data(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Transports, SharedBuffers, ::testing::Values(std::string("shm"), std::string("mpi")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mirror::coll::testing
