// test_timeout.cc — a rank that skips a collective turns into kTimeout on the ranks that wait for it,
// naming the op, its sequence number and size; the communicator then refuses further work; MPI itself
// stays usable (the test main's final exit-code agreement runs over MPI_COMM_WORLD). Over the MPI
// transport the error also names the rank that did not arrive (it never answers the failure notices) and
// the ranks that are in the collective; a rank that skips one collective and calls the next one instead is
// a mismatch at that sequence number, reported at once on every rank.
// Its own binary: the abandoned messages stay inside the communicators this test throws away.
#include <gtest/gtest.h>

#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "skipped_collective.h"

namespace mirror::coll {
namespace {

std::unique_ptr<Communicator> make_short_timeout(std::string transport = std::string("auto")) {
  CommOptions o;
  o.timeout = std::chrono::milliseconds(2000);  // short, yet far above a 16-byte collective under load
  o.backend = parse_backend("host", transport);
  return make_communicator(o);
}

// "did not arrive: rank 0 (no answer ...)" and "in it: ranks 1, 2, 3" (every rank but 0).
void expect_rank0_missing(const Error& e, int size) {
  const std::string what = e.what();
  EXPECT_NE(what.find("did not arrive: rank 0 (no answer within"), std::string::npos) << what;
  std::string in_it = size == 2 ? "in it: rank 1" : "in it: ranks 1";
  for (int r = 2; r < size; ++r) in_it += ", " + std::to_string(r);
  EXPECT_NE(what.find(in_it), std::string::npos) << "expected '" << in_it << "' in: " << what;
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
  const int size = c->size();
  testing::run_skipped_blocking(*c, [size](const Error& e) {
    expect_timeout(e, "allreduce");
    expect_rank0_missing(e, size);
  }, false);
}

TEST(Timeout, MpiTransportAsyncNamesTheMissingRank) {
  auto c = make_short_timeout(std::string("mpi"));
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  const int size = c->size();
  testing::run_skipped_async(*c, [size](const Error& e) {
    expect_timeout(e, "allreduce");
    expect_rank0_missing(e, size);
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
