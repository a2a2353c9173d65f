// test_shm_timeout.cc — shared-memory transport: a rank that skips a collective turns into kTimeout on
// the ranks that wait for it, naming the op, its sequence number, its size and the rank that did not
// arrive (with the last collective it issued); the communicator then refuses further work. Staged and
// single-copy (ShmCopy::kSingle) paths alike, and after kAuto's copy-path probe.
// Its own binary, so its deliberately abandoned collectives cannot affect other tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "skipped_collective.h"
#include "world_hosts.h"

namespace mirror::coll {
namespace {

std::unique_ptr<Communicator> make_short_timeout(ShmCopy copy = ShmCopy::kAuto) {
  CommOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.backend = parse_backend("host", "shm");
  o.shm_copy = copy;
  return make_communicator(o);
}

void expect_timeout(const Error& e, const std::string& op) {
  EXPECT_EQ(e.kind(), ErrorKind::kTimeout) << e.what();
  const std::string what = e.what();
  EXPECT_NE(what.find(op + " #1 "), std::string::npos) << what;  // #0 succeeded, #1 is the skipped one
  EXPECT_NE(what.find("16 bytes"), std::string::npos) << what;
  EXPECT_NE(what.find("did not arrive: rank 0 (last issued: " + op + " #0"), std::string::npos) << what;
  const std::string host = "(host " + testing::this_host() + ", shared-memory transport";  // all on this host
  EXPECT_NE(what.find(host), std::string::npos) << "expected '" << host << "' in: " << what;
}

TEST(ShmTimeout, SkippedBlockingCollectiveTimesOut) {
  auto c = make_short_timeout();
  testing::run_skipped_blocking(*c, [](const Error& e) { expect_timeout(e, "allreduce"); }, true);
}

// The single-copy path (cross-memory attach) waits in the same bounded syncs.
TEST(ShmTimeout, SkippedSingleCopyCollectiveTimesOut) {
  auto c = make_short_timeout(ShmCopy::kSingle);
  testing::run_skipped_blocking(*c, [](const Error& e) { expect_timeout(e, "allreduce"); }, true);
}

// After kAuto's copy-path probe ran inside #0 (its own calls are numbered on from #0), a skipped #1 still
// names #0 as rank 0's last call.
TEST(ShmTimeout, SkippedCollectiveAfterTheCopyProbeNamesTheUsersLastCall) {
  auto c = make_short_timeout();
  std::vector<float> v(16384, 1.0f);
  c->allreduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum);  // #0: runs the probe
  EXPECT_EQ(v[0], static_cast<float>(c->size()));
  EXPECT_FALSE(shm_copy_probe(*c).figures.empty());
  if (c->rank() == 0) return;  // rank 0 skips #1
  try {
    c->allreduce(v.data(), v.data(), 4, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "allreduce without rank 0 did not time out";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("allreduce #1 "), std::string::npos) << what;
    EXPECT_NE(what.find("did not arrive: rank 0 (last issued: allreduce #0 (16384 x float32 sum, 65536 bytes)"),
              std::string::npos)
        << what;
  }
}

TEST(ShmTimeout, SkippedAsyncCollectiveTimesOutInWait) {
  auto c = make_short_timeout();
  testing::run_skipped_async(*c, [](const Error& e) { expect_timeout(e, "allreduce"); });
}

}  // namespace
}  // namespace mirror::coll
