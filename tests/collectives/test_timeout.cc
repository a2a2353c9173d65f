// test_timeout.cc — a rank that skips a collective turns into kTimeout on the ranks that wait for it,
// naming the op, its sequence number and size; the communicator then refuses further work; MPI itself
// stays usable (the test main's final exit-code agreement runs over MPI_COMM_WORLD).
// Its own binary: the abandoned messages stay inside the communicators this test throws away.
#include <gtest/gtest.h>

#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {
namespace {

std::unique_ptr<Communicator> make_short_timeout() {
  CommOptions o;
  o.timeout = std::chrono::milliseconds(2000);  // short, yet far above a 16-byte collective under load
  return make_communicator(o);
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
  float v[4] = {1, 1, 1, 1};
  c->allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);  // #0: everyone
  EXPECT_EQ(v[0], static_cast<float>(c->size()));
  if (c->rank() == 0) return;  // rank 0 skips #1
  try {
    c->allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "allreduce without rank 0 did not time out";
  } catch (const Error& e) {
    expect_timeout(e, "allreduce");
  }
  // The communicator is unusable now, and says why.
  try {
    c->barrier();
    ADD_FAILURE() << "barrier on a failed communicator succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("earlier failure"), std::string::npos) << e.what();
  }
}

TEST(Timeout, SkippedAsyncCollectiveTimesOutInWait) {
  auto c = make_short_timeout();
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  std::int32_t v[4] = {1, 2, 3, 4};
  c->allreduce(v, v, 4, DataType::kInt32, ReduceOp::kMax);  // #0
  if (c->rank() == 0) return;
  Work w = c->allreduce_async(v, v, 4, DataType::kInt32, ReduceOp::kMax);
  try {
    w.wait();
    ADD_FAILURE() << "async allreduce without rank 0 did not time out";
  } catch (const Error& e) {
    expect_timeout(e, "allreduce");
  }
}

}  // namespace
}  // namespace mirror::coll
