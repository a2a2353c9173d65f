// test_consistency.cc — the consistency check of the host backend over the MPI transport: ranks that issue
// different collectives (count, dtype, reduction, kind, root, order; small and large messages) fail on EVERY
// rank with kInvalidArgument "ranks issued mismatched collectives at #1: ..." naming each side's call — not
// with kTimeout (the communicators here have a 15 s timeout, far above the test's run time, so a mismatch
// that went undetected would show up as a timeout or a wrong kind). Matching calls of every shape still
// give exact results with the check on (fingerprints on every path: piggybacked, separate, zero-byte).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll::testing {
namespace {

std::unique_ptr<Communicator> make_mpi(bool check = true) {
  CommOptions o;
  o.backend = parse_backend("host", "mpi");
  o.timeout = std::chrono::seconds(15);
  o.check_consistency = check;
  return make_communicator(o);
}

// Collective #1 mismatched, the odd rank out the last one (collective_checks.h).
void expect_mismatch_everywhere(const std::function<void(Communicator&, bool odd)>& call,
                                const std::vector<std::string>& fragments) {
  auto c = make_mpi();
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  testing::expect_mismatch_everywhere(*c, c->size() - 1, call, fragments);
}

TEST(Consistency, DifferentCountSmall) {
  std::vector<float> v(1000, 1.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) { c.allreduce(v.data(), v.data(), odd ? 999 : 1000, DataType::kFloat32, ReduceOp::kSum); },
      {"rank 0 allreduce float32 x 1000 sum", "allreduce float32 x 999 sum"});
}

TEST(Consistency, DifferentCountLarge) {  // ring path, fingerprint sent ahead of the payload
  std::vector<float> v(300001, 1.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) { c.allreduce(v.data(), v.data(), odd ? 300000 : 300001, DataType::kFloat32, ReduceOp::kSum); },
      {"rank 0 allreduce float32 x 300001 sum", "allreduce float32 x 300000 sum"});
}

TEST(Consistency, SmallAgainstLarge) {  // different algorithms, different peers
  std::vector<float> v(300000, 1.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) { c.allreduce(v.data(), v.data(), odd ? 300000 : 100, DataType::kFloat32, ReduceOp::kSum); },
      {"rank 0 allreduce float32 x 100 sum", "allreduce float32 x 300000 sum"});
}

TEST(Consistency, DifferentDtype) {
  std::vector<std::int32_t> v(64, 1);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) {
        c.allreduce(v.data(), v.data(), 64, odd ? DataType::kInt32 : DataType::kFloat32, ReduceOp::kSum);
      },
      {"rank 0 allreduce float32 x 64 sum", "allreduce int32 x 64 sum"});
}

TEST(Consistency, DifferentReduction) {
  std::vector<float> v(64, 1.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) {
        c.allreduce(v.data(), v.data(), 64, DataType::kFloat32, odd ? ReduceOp::kMax : ReduceOp::kSum);
      },
      {"rank 0 allreduce float32 x 64 sum", "allreduce float32 x 64 max"});
}

TEST(Consistency, DifferentOp) {
  std::vector<float> v(64, 1.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) {
        if (odd) {
          c.broadcast(v.data(), 64, DataType::kFloat32, 0);
        } else {
          c.allreduce(v.data(), v.data(), 64, DataType::kFloat32, ReduceOp::kSum);
        }
      },
      {"rank 0 allreduce float32 x 64 sum", "broadcast float32 x 64 root 0"});
}

TEST(Consistency, DifferentRoot) {
  std::vector<float> v(64, 1.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) { c.broadcast(v.data(), 64, DataType::kFloat32, odd ? 1 : 0); },
      {"rank 0 broadcast float32 x 64 root 0", "broadcast float32 x 64 root 1"});
}

TEST(Consistency, DifferentOrder) {
  std::vector<float> a(64, 1.0f), mine(8, 1.0f), all(8 * 64, 0.0f);
  expect_mismatch_everywhere(
      [&](Communicator& c, bool odd) {
        if (odd) {
          c.allgather(mine.data(), all.data(), 8, DataType::kFloat32);  // in the wrong order
          c.allreduce(a.data(), a.data(), 64, DataType::kFloat32, ReduceOp::kSum);
        } else {
          c.allreduce(a.data(), a.data(), 64, DataType::kFloat32, ReduceOp::kSum);
          c.allgather(mine.data(), all.data(), 8, DataType::kFloat32);
        }
      },
      {"rank 0 allreduce float32 x 64 sum", "allgather float32 x 8"});
}

TEST(Consistency, AsyncMismatchFailsInWait) {
  auto c = make_mpi();
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  std::vector<double> v(100, 1.0);
  const bool odd = c->rank() == c->size() - 1;
  Work w = c->allreduce_async(v.data(), v.data(), odd ? 99 : 100, DataType::kFloat64, ReduceOp::kSum);  // #0
  try {
    w.wait();
    c->barrier();
    ADD_FAILURE() << "async mismatch not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("ranks issued mismatched collectives at #0:"), std::string::npos) << e.what();
  }
}

// No false alarms: every op, dtype, reduction and placement, counts on every path (piggybacked fingerprint
// up to 16 KiB, a separate fingerprint above it, the ring above 64 KiB, zero bytes), against the serial
// reference, with the check on.
TEST(Consistency, MatchingCallsStillExact) {
  auto c = make_mpi();
  const std::vector<std::size_t> counts = {0, 1, 7, 1000, 6000, 30000};
  for (DataType t : all_dtypes()) {
    for (std::size_t n : counts) {
      for (bool in_place : {false, true}) {
        for (ReduceOp op : all_ops()) {
          EXPECT_TRUE(check_allreduce(*c, false, t, op, n, in_place));
          EXPECT_TRUE(check_reduce_scatter(*c, false, t, op, n / 4, in_place));
        }
        EXPECT_TRUE(check_allgather(*c, false, t, n / 4, in_place));
      }
      for (int root = 0; root < c->size(); ++root) EXPECT_TRUE(check_broadcast(*c, false, t, n, root));
    }
  }
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, kLargeCount, false));
  EXPECT_TRUE(check_broadcast(*c, false, DataType::kFloat32, kLargeCount, c->size() - 1));  // scatter + allgather
  c->barrier();
}

TEST(Consistency, CheckCanBeTurnedOff) {
  auto c = make_mpi(false);
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, 1000, false));
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, 30000, true));
}

}  // namespace
}  // namespace mirror::coll::testing
