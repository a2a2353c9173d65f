// test_timeout.cc — a rank that skips a collective turns into kTimeout on the ranks that wait for it,
// naming the op, its sequence number and size; the communicator then refuses further work; MPI itself
// stays usable (the test main's final exit-code agreement runs over MPI_COMM_WORLD). Over the MPI
// transport the error also names the rank that did not arrive (it never answers the failure notices) and
// the ranks that are in the collective; a rank that skips one collective and calls the next one instead is
// a mismatch at that sequence number, reported at once on every rank.
// Its own binary: the abandoned messages stay inside the communicators this test throws away.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "skipped_collective.h"
#include "world_hosts.h"

namespace mirror::coll {
namespace {

std::unique_ptr<Communicator> make_short_timeout(std::string transport = std::string("auto")) {
  CommOptions o;
  o.timeout = std::chrono::milliseconds(2000);  // short, yet far above a 16-byte collective under load
  o.backend = parse_backend("host", transport);
  return make_communicator(o);
}

// "did not arrive: rank 0 (host H0; no answer ...)" and "in it: ranks 1, 2, 3 (host ...)" (every rank but 0,
// then their hosts), and this rank named with its host ("on rank 2 (host H2)" or "failed on rank 2 (host H2)").
void expect_rank0_missing(const Error& e, int rank, const std::vector<std::string>& hosts) {
  const std::string what = e.what();
  const int size = static_cast<int>(hosts.size());
  EXPECT_NE(what.find("did not arrive: rank 0 (host " + hosts[0] + "; no answer within"), std::string::npos) << what;
  std::string in_it = size == 2 ? "in it: rank 1" : "in it: ranks 1";
  for (int r = 2; r < size; ++r) in_it += ", " + std::to_string(r);
  const auto at = what.find(in_it + " (host");
  EXPECT_NE(at, std::string::npos) << "expected '" << in_it << " (host' in: " << what;
  for (int r = 1; r < size && at != std::string::npos; ++r) {
    EXPECT_NE(what.find(hosts[static_cast<std::size_t>(r)], at), std::string::npos) << "host of rank " << r << ": " << what;
  }
  const std::string me = "rank " + std::to_string(rank) + " (host " + hosts[static_cast<std::size_t>(rank)];
  EXPECT_NE(what.find(me), std::string::npos) << "expected '" << me << "' in: " << what;
}

void expect_timeout(const Error& e, const std::string& op) {
  EXPECT_EQ(e.kind(), ErrorKind::kTimeout) << e.what();
  const std::string what = e.what();
  EXPECT_NE(what.find(op + " #1 "), std::string::npos) << what;  // op #0 succeeded, #1 is the skipped one
  EXPECT_NE(what.find("16 bytes"), std::string::npos) << what;
}

TEST(Timeout, SkippedBlockingCollectiveTimesOut) {
  auto c = make_short_timeout();
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  testing::run_skipped_blocking(*c, [](const Error& e) { expect_timeout(e, "allreduce"); }, true);
}

TEST(Timeout, SkippedAsyncCollectiveTimesOutInWait) {
  auto c = make_short_timeout();
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  testing::run_skipped_async(*c, [](const Error& e) { expect_timeout(e, "allreduce"); });
}

TEST(Timeout, MpiTransportNamesTheMissingRank) {
  auto c = make_short_timeout(std::string("mpi"));
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  const int rank = c->rank();
  const std::vector<std::string> hosts = testing::world_hosts();  // on every rank, before the skip
  testing::run_skipped_blocking(*c, [rank, &hosts](const Error& e) {
    expect_timeout(e, "allreduce");
    expect_rank0_missing(e, rank, hosts);
  }, false);
}

TEST(Timeout, MpiTransportAsyncNamesTheMissingRank) {
  auto c = make_short_timeout(std::string("mpi"));
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  const int rank = c->rank();
  const std::vector<std::string> hosts = testing::world_hosts();  // on every rank, before the skip
  testing::run_skipped_async(*c, [rank, &hosts](const Error& e) {
    expect_timeout(e, "allreduce");
    expect_rank0_missing(e, rank, hosts);
  });
}

TEST(Timeout, SkippingOneCollectiveAndCallingTheNextIsAMismatch) {
  auto c = make_short_timeout(std::string("mpi"));
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  float v[4] = {1, 1, 1, 1};
  c->allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);  // #0
  try {
    if (c->rank() == 0) {
      c->barrier();  // rank 0's #1; the others' #1 is the allreduce
      c->barrier();
    } else {
      c->allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);
    }
    ADD_FAILURE() << "skipped collective not detected";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << what;
    EXPECT_NE(what.find("ranks issued mismatched collectives at #1: rank 0 barrier, rank 1 allreduce float32 x 4 sum"),
              std::string::npos) << what;
  }
}

}  // namespace
}  // namespace mirror::coll
