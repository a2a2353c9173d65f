// test_hierarchical_collectives.cc — the hierarchical backend (shared memory inside each host, MPI between
// hosts) on one machine, through the CommOptions::hosts_for_testing seam (consecutive blocks of ranks as
// hosts): the conformance matrix (every op x dtype x reduction x in/out-of-place x counts {0, 1, 7, 1000},
// broadcast from every root, the large paths at 1000003 elements) against the serial reference, async
// calls waited out of order, the consistency check across and inside hosts (including a mismatch the inner
// calls alone cannot see: avg against sum), a skipped collective timing out naming the stage, and the
// choice: auto picks it for uniform hosts, falls back to mpi saying why otherwise, and refuses it by name
// when the hosts are uneven. Under mpirun with np 1..4: 2 fake hosts (np 2: one rank each; np 4: two each;
// np 3: uneven, so refused), also 1 host and one host per rank where they are possible. With
// MIRROR_TEST_REAL_HOSTS=1 the main cases run over the real hosts instead (the cluster tests).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "world_hosts.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"

namespace mirror::coll::testing {
namespace {

CommOptions hierarchical(int hosts) {
  CommOptions o;
  o.backend = parse_backend("host", "hierarchical");
  o.hosts_for_testing = hosts;
  o.timeout = std::chrono::seconds(60);
  return o;
}

int world_size() { return MpiRuntime::world_size(); }

// The hosts the main cases run over: 2 fake hosts, or with MIRROR_TEST_REAL_HOSTS=1 in the test's
// environment the real ones (0: no fake hosts), for the cluster tests that run this binary on namespaced hosts.
int main_hosts() {
  static const int h = [] {
    const char* real = std::getenv("MIRROR_TEST_REAL_HOSTS");
    return real && std::string(real) == "1" ? 0 : 2;
  }();
  return h;
}
bool main_hosts_possible() { return main_hosts() == 0 || world_size() % 2 == 0; }

// Hierarchical communicators by fake host count, made once (every rank alike) and kept to the end.
std::map<int, std::unique_ptr<Communicator>>& comms() {
  static std::map<int, std::unique_ptr<Communicator>> m;
  return m;
}
class Env : public ::testing::Environment {
 public:
  void TearDown() override { comms().clear(); }
};
[[maybe_unused]] ::testing::Environment* const kEnv = ::testing::AddGlobalTestEnvironment(new Env);

Communicator& comm(int hosts) {
  auto& c = comms()[hosts];
  if (!c) c = make_communicator(hierarchical(hosts));
  return *c;
}

// The host counts that make uniform blocks of this world: 2 (the case of the issue), 1 and one per rank.
std::vector<int> uniform_host_counts() {
  const int n = world_size();
  std::vector<int> out;
  if (n % 2 == 0) out.push_back(2);
  if (n > 2) out.push_back(n);
  if (n > 1) out.push_back(1);
  return out;
}

TEST(HierarchicalMatrix, EveryOpTypeCountAndPlacement) {
  if (!main_hosts_possible()) GTEST_SKIP() << "2 fake hosts need an even rank count";
  Communicator& c = comm(main_hosts());
  EXPECT_STREQ(c.backend().name, "hierarchical");
  std::vector<std::string> reported, declared(c.backend().statistics.begin(), c.backend().statistics.end());
  for (const Statistic& s : c.statistics()) reported.push_back(s.name);
  EXPECT_EQ(reported, declared);
  EXPECT_TRUE(c.selection_note().empty()) << c.selection_note();  // asked for by name
  for (DataType t : all_dtypes()) {
    for (std::size_t count : small_counts()) {
      for (bool in_place : {false, true}) {
        for (ReduceOp op : all_ops()) {
          EXPECT_TRUE(check_allreduce(c, false, t, op, count, in_place));
          EXPECT_TRUE(check_reduce_scatter(c, false, t, op, count, in_place));
        }
        EXPECT_TRUE(check_allgather(c, false, t, count, in_place));
      }
      for (int root = 0; root < c.size(); ++root) EXPECT_TRUE(check_broadcast(c, false, t, count, root));
    }
  }
}

// The large paths: reduce-scatter / allreduce / all-gather in the allreduce (with a tail of n % L), the
// split broadcast (from a root on each host), and big reordered allgather / reduce_scatter blocks.
TEST(HierarchicalMatrix, LargeCounts) {
  for (int hosts : main_hosts() == 0 ? std::vector<int>{0} : uniform_host_counts()) {
    Communicator& c = comm(hosts);
    SCOPED_TRACE("fake hosts: " + std::to_string(hosts));
    EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat32, ReduceOp::kSum, kLargeCount, false));
    EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat32, ReduceOp::kAvg, kLargeCount, true));
    EXPECT_TRUE(check_allreduce(c, false, DataType::kBFloat16, ReduceOp::kAvg, kLargeCount, true));
    EXPECT_TRUE(check_allreduce(c, false, DataType::kInt64, ReduceOp::kMax, kLargeCount, false));
    EXPECT_TRUE(check_allreduce(c, false, DataType::kFloat16, ReduceOp::kProd, kLargeCount, false));
    EXPECT_TRUE(check_allreduce(c, false, DataType::kInt32, ReduceOp::kAvg, kLargeCount, true));
    const std::size_t per_rank = kLargeCount / static_cast<std::size_t>(c.size()) + 1;
    EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kFloat32, ReduceOp::kSum, per_rank, false));
    EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kFloat16, ReduceOp::kAvg, per_rank, true));
    EXPECT_TRUE(check_reduce_scatter(c, false, DataType::kInt32, ReduceOp::kMin, per_rank, true));
    EXPECT_TRUE(check_allgather(c, false, DataType::kFloat64, per_rank, true));
    EXPECT_TRUE(check_allgather(c, false, DataType::kBFloat16, per_rank, false));
    EXPECT_TRUE(check_broadcast(c, false, DataType::kFloat32, kLargeCount, 0));
    EXPECT_TRUE(check_broadcast(c, false, DataType::kInt64, kLargeCount, c.size() - 1));
  }
}

// The degenerate shapes (one host: no network stage; one rank per host: no shared-memory work).
TEST(HierarchicalMatrix, OneHostAndOneRankPerHost) {
  if (main_hosts() == 0) GTEST_SKIP() << "fake-host shapes (real hosts in use)";
  for (int hosts : uniform_host_counts()) {
    if (hosts == 2) continue;
    Communicator& c = comm(hosts);
    SCOPED_TRACE("fake hosts: " + std::to_string(hosts));
    for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
      for (std::size_t count : small_counts()) {
        for (bool in_place : {false, true}) {
          EXPECT_TRUE(check_allreduce(c, false, t, ReduceOp::kAvg, count, in_place));
          EXPECT_TRUE(check_reduce_scatter(c, false, t, ReduceOp::kSum, count, in_place));
          EXPECT_TRUE(check_allgather(c, false, t, count, in_place));
        }
        EXPECT_TRUE(check_broadcast(c, false, t, count, c.size() - 1));
      }
    }
  }
}

TEST(HierarchicalSemantics, IntegerAverageTruncatesTowardZero) {
  if (!main_hosts_possible()) GTEST_SKIP() << "2 fake hosts need an even rank count";
  Communicator& c = comm(main_hosts());
  const int n = c.size(), r = c.rank();
  const std::int64_t sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
  std::int32_t neg = -(r + 1), pos = r + 1;
  c.allreduce(&neg, &neg, 1, DataType::kInt32, ReduceOp::kAvg);
  c.allreduce(&pos, &pos, 1, DataType::kInt32, ReduceOp::kAvg);
  EXPECT_EQ(neg, static_cast<std::int32_t>(-sum / n));  // the sum over all ranks, divided once
  EXPECT_EQ(pos, static_cast<std::int32_t>(sum / n));
}

TEST(HierarchicalAsync, OutstandingOpsWaitedOutOfOrder) {
  if (!main_hosts_possible()) GTEST_SKIP() << "2 fake hosts need an even rank count";
  Communicator& c = comm(main_hosts());
  const int n = c.size(), r = c.rank();
  const std::size_t big = 300001;  // the reduce-scatter path, with a tail
  std::vector<float> a(big, static_cast<float>(r + 1));
  std::vector<std::int64_t> g(static_cast<std::size_t>(n) * 3);
  std::int64_t mine[3] = {r, 10 * r, 100 * r};
  std::vector<double> b(5, r == n - 1 ? 7.0 : 0.0);
  Work w1 = c.allreduce_async(a.data(), a.data(), big, DataType::kFloat32, ReduceOp::kSum);
  Work w2 = c.allgather_async(mine, g.data(), 3, DataType::kInt64);
  Work w3 = c.broadcast_async(b.data(), b.size(), DataType::kFloat64, n - 1);
  float x = 1.0f;
  c.allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum);  // blocking, queued behind them
  w3.wait();
  w1.wait();
  w2.wait();
  w1.wait();  // twice is fine
  EXPECT_EQ(x, static_cast<float>(n));
  const float expect = static_cast<float>(n * (n + 1) / 2);
  for (std::size_t i = 0; i < big; ++i) {
    if (a[i] != expect) {
      ADD_FAILURE() << "allreduce element " << i << ": " << a[i] << ", expected " << expect;
      break;
    }
  }
  for (int q = 0; q < n; ++q) {
    EXPECT_EQ(g[3 * q], q);
    EXPECT_EQ(g[3 * q + 1], 10 * q);
    EXPECT_EQ(g[3 * q + 2], 100 * q);
  }
  for (double v : b) EXPECT_EQ(v, 7.0);
}

// Collective #1 mismatched on rank `odd_rank` (collective_checks.h). A 15 s timeout is far above the run
// time, so an undetected mismatch shows as a timeout.
void expect_mismatch(int odd_rank, const std::function<void(Communicator&, bool)>& call,
                     const std::vector<std::string>& fragments) {
  CommOptions o = hierarchical(main_hosts());
  o.timeout = std::chrono::seconds(15);
  auto c = make_communicator(o);
  expect_mismatch_everywhere(*c, odd_rank, call, fragments);
}

TEST(HierarchicalConsistency, MismatchAcrossHostsAndInsideOne) {
  if (!main_hosts_possible()) GTEST_SKIP() << "2 fake hosts need an even rank count";
  const int last = world_size() - 1;
  std::vector<float> v(1000, 1.0f);
  // The last rank (on host 1) asks for 999 elements.
  expect_mismatch(last, [&](Communicator& c, bool odd) {
    c.allreduce(v.data(), v.data(), odd ? 999 : 1000, DataType::kFloat32, ReduceOp::kSum);
  }, {"allreduce float32 x 999 sum"});
  // avg against sum: the inner calls are sums either way; only the outer check can tell.
  expect_mismatch(0, [&](Communicator& c, bool odd) {
    c.allreduce(v.data(), v.data(), 1000, DataType::kFloat32, odd ? ReduceOp::kAvg : ReduceOp::kSum);
  }, {"avg"});
  // Broadcast roots that differ: no rank may just send.
  expect_mismatch(last, [&](Communicator& c, bool odd) { c.broadcast(v.data(), 10, DataType::kFloat32, odd ? 1 : 0); },
                  {"broadcast float32 x 10 root"});
}

TEST(HierarchicalConsistency, MatchingCallsStillExactWithTheCheckOff) {
  if (!main_hosts_possible()) GTEST_SKIP() << "2 fake hosts need an even rank count";
  CommOptions o = hierarchical(main_hosts());
  o.check_consistency = false;
  auto c = make_communicator(o);
  for (DataType t : all_dtypes()) {
    EXPECT_TRUE(check_allreduce(*c, false, t, ReduceOp::kSum, 1000, false));
    EXPECT_TRUE(check_reduce_scatter(*c, false, t, ReduceOp::kAvg, 7, true));
    EXPECT_TRUE(check_allgather(*c, false, t, 7, false));
    EXPECT_TRUE(check_broadcast(*c, false, t, 1000, c->size() - 1));
  }
}

// Rank 0 (host 0) skips #1: every other rank gets kTimeout naming the collective and, in world ranks, rank 0
// as the one that did not arrive (whichever stage each was in); later calls are refused.
TEST(HierarchicalTimeout, SkippedCollectiveTimesOutNamingTheRank) {
  if (!main_hosts_possible()) GTEST_SKIP() << "2 fake hosts need an even rank count";
  CommOptions o = hierarchical(main_hosts());
  o.timeout = std::chrono::milliseconds(2000);
  auto c = make_communicator(o);
  const std::vector<std::string> hosts = world_hosts();  // on every rank, before rank 0 leaves
  float v[4] = {1, 1, 1, 1};
  c->allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);  // #0
  EXPECT_EQ(v[0], static_cast<float>(c->size()));
  if (c->rank() == 0) return;
  try {
    c->allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "allreduce without rank 0 did not fail";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout) << what;
    EXPECT_NE(what.find("allreduce #1 (4 x float32 sum"), std::string::npos) << what;
    // Explained over all ranks, in world ranks: rank 0 is the one that did not arrive.
    const std::string missing = "did not arrive: rank 0 (host " + hosts[0] + "; no answer";
    EXPECT_NE(what.find(missing), std::string::npos) << what;
  }
  try {
    c->barrier();
    ADD_FAILURE() << "barrier on a failed communicator succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("earlier failure"), std::string::npos) << e.what();
  }
}

TEST(HierarchicalSelection, AutoForcedAndRefused) {
  if (main_hosts() == 0) GTEST_SKIP() << "fake-host selection cases (real hosts in use)";
  const int n = world_size();
  if (n == 1) {  // more fake hosts than ranks
    EXPECT_THROW(make_communicator(hierarchical(2)), Error);
    return;
  }
  CommOptions automatic;
  automatic.hosts_for_testing = 2;
  auto a = make_communicator(automatic);
  const std::string note = a->selection_note();
  EXPECT_NE(note.find("not shm: "), std::string::npos) << note;
  if (n % 2 != 0) {
    // Uneven hosts: auto goes flat and says why; asking for it by name is refused, naming the hosts.
    EXPECT_STREQ(a->backend().name, "mpi");
    EXPECT_NE(note.find("not hierarchical: hosts have 2, 1 ranks"), std::string::npos) << note;
    EXPECT_NE(std::string(transport_name(*a)).find("mpi; not shm"), std::string::npos) << transport_name(*a);
    try {
      make_communicator(hierarchical(2));
      ADD_FAILURE() << "hierarchical over uneven hosts was made";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("backend hierarchical is not possible: hosts have 2, 1 ranks"),
                std::string::npos) << e.what();
    }
  } else if (n == 2) {
    EXPECT_STREQ(a->backend().name, "mpi");  // one rank per host: nothing to share inside a host
    EXPECT_NE(note.find("not hierarchical: one rank per host"), std::string::npos) << note;
  } else {
    EXPECT_STREQ(a->backend().name, "hierarchical");
    EXPECT_TRUE(check_allreduce(*a, false, DataType::kFloat32, ReduceOp::kSum, 1000, false));
  }
  // shm by name over several hosts is refused.
  CommOptions shm = automatic;
  shm.backend = parse_backend("host", "shm");
  EXPECT_THROW(make_communicator(shm), Error);
}

}  // namespace
}  // namespace mirror::coll::testing
