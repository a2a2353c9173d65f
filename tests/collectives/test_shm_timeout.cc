// test_shm_timeout.cc — shared-memory transport: a rank that skips a collective turns into kTimeout on
// the ranks that wait for it, naming the op, its sequence number, its size and the rank that did not
// arrive (with the last collective it issued); the communicator then refuses further work.
// Its own binary, so its deliberately abandoned collectives cannot affect other tests.
#include <gtest/gtest.h>

#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {
namespace {

std::unique_ptr<Communicator> make_short_timeout() {
  CommOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.host_transport = HostTransport::kShm;
  return make_communicator(o);
}

void expect_timeout(const Error& e, const std::string& op) {
  EXPECT_EQ(e.kind(), ErrorKind::kTimeout) << e.what();
  const std::string what = e.what();
  EXPECT_NE(what.find(op + " #1 "), std::string::npos) << what;  // #0 succeeded, #1 is the skipped one
  EXPECT_NE(what.find("16 bytes"), std::string::npos) << what;
  EXPECT_NE(what.find("did not arrive: rank 0 (last issued: " + op + " #0"), std::string::npos) << what;
}

TEST(ShmTimeout, SkippedBlockingCollectiveTimesOut) {
  auto c = make_short_timeout();
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
  try {
    c->barrier();
    ADD_FAILURE() << "barrier on a failed communicator succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("earlier failure"), std::string::npos) << e.what();
  }
}

TEST(ShmTimeout, SkippedAsyncCollectiveTimesOutInWait) {
  auto c = make_short_timeout();
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
