// test_shm_async.cc — shared-memory transport: async collectives outstanding together and waited out of
// order (small and pipelined sizes, every kind, a blocking call among them), the no-progress-thread
// fallback, and calls that differ between ranks failing on every rank with kInvalidArgument naming what
// each rank issued (instead of mixing data).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll::testing {
namespace {

std::unique_ptr<Communicator> make_shm(bool progress_thread = true) {
  CommOptions o;
  o.timeout = std::chrono::seconds(60);
  o.backend = parse_backend("host", "shm");
  o.progress_thread = progress_thread;
  auto c = make_communicator(o);
  EXPECT_STREQ(transport_name(*c), "shm");
  return c;
}

void outstanding_out_of_order(Communicator& c) {
  const int n = c.size(), r = c.rank();
  constexpr int kOps = 6;
  const std::size_t counts[kOps] = {1, 7, 1000, 300001, 0, 20000};  // 300001 doubles: pipelined
  std::vector<std::vector<double>> bufs(kOps);
  std::vector<Work> works;
  for (int k = 0; k < kOps; ++k) {
    bufs[k].resize(counts[k]);
    for (std::size_t i = 0; i < counts[k]; ++i) bufs[k][i] = test_input(ReduceOp::kSum, r, i + k, n);
    works.push_back(c.allreduce_async(bufs[k].data(), bufs[k].data(), counts[k], DataType::kFloat64, ReduceOp::kSum));
  }
  std::int64_t token = r;
  c.allreduce(&token, &token, 1, DataType::kInt64, ReduceOp::kSum);  // runs after the queued ones
  EXPECT_EQ(token, static_cast<std::int64_t>(n) * (n - 1) / 2);
  for (int k = kOps - 1; k >= 0; --k) {
    works[k].wait();
    EXPECT_TRUE(works[k].done());
    for (std::size_t i = 0; i < counts[k]; ++i)
      ASSERT_EQ(bufs[k][i], test_reference(ReduceOp::kSum, i + k, n)) << "op " << k << " element " << i;
  }
  works[0].wait();
}

TEST(ShmAsync, OutstandingOpsWaitedOutOfOrder) {
  auto c = make_shm();
  outstanding_out_of_order(*c);
}

TEST(ShmAsync, WithoutProgressThreadSameResults) {
  auto c = make_shm(false);
  outstanding_out_of_order(*c);
}

TEST(ShmAsync, EveryAsyncOp) {
  auto c = make_shm();
  const int n = c->size(), r = c->rank();
  const std::size_t count = 70001;  // above 64 KiB for every op
  std::vector<float> ar(count), bc(count), ag(count * n), rs_in(count * n), rs(count);
  for (std::size_t i = 0; i < count; ++i) {
    ar[i] = static_cast<float>(test_input(ReduceOp::kMax, r, i, n));
    bc[i] = r == 0 ? static_cast<float>(i % 1000) : -1.0f;
    ag[r * count + i] = static_cast<float>(r * 100 + static_cast<int>(i % 50));
  }
  for (std::size_t j = 0; j < count * n; ++j) rs_in[j] = static_cast<float>(test_input(ReduceOp::kSum, r, j, n));
  Work w1 = c->allreduce_async(ar.data(), ar.data(), count, DataType::kFloat32, ReduceOp::kMax);
  Work w2 = c->broadcast_async(bc.data(), count, DataType::kFloat32, 0);
  Work w3 = c->allgather_async(ag.data() + r * count, ag.data(), count, DataType::kFloat32);
  Work w4 = c->reduce_scatter_async(rs_in.data(), rs.data(), count, DataType::kFloat32, ReduceOp::kSum);
  w4.wait();
  w2.wait();
  w3.wait();
  w1.wait();
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(ar[i], static_cast<float>(test_reference(ReduceOp::kMax, i, n))) << i;
    ASSERT_EQ(bc[i], static_cast<float>(i % 1000)) << i;
    for (int q = 0; q < n; ++q) ASSERT_EQ(ag[q * count + i], static_cast<float>(q * 100 + static_cast<int>(i % 50)));
    ASSERT_EQ(rs[i], static_cast<float>(test_reference(ReduceOp::kSum, r * count + i, n))) << i;
  }
}

// Every rank must fail with kInvalidArgument naming rank 0's and rank 1's calls; later calls are refused.
void expect_mismatch(Communicator& c, const std::function<void()>& call, const std::string& rank0_text,
                     const std::string& rank1_text) {
  try {
    call();
    ADD_FAILURE() << "mismatched collectives did not fail on rank " << c.rank();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << what;
    EXPECT_NE(what.find("ranks issued mismatched collectives"), std::string::npos) << what;
    EXPECT_NE(what.find(rank0_text), std::string::npos) << what;
    EXPECT_NE(what.find(rank1_text), std::string::npos) << what;
  }
  EXPECT_THROW(c.barrier(), Error);
}

TEST(ShmMismatch, DifferentCollectives) {
  auto c = make_shm();
  if (c->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  std::vector<float> v(1000, 1.0f);
  c->barrier();  // #0 agrees
  expect_mismatch(
      *c,
      [&] {
        if (c->rank() == 0) c->allreduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum);
        else c->broadcast(v.data(), v.size(), DataType::kFloat32, 0);
      },
      "rank 0 allreduce #1 (1000 x float32 sum", "rank 1 broadcast #1 (1000 x float32 root 0");
}

TEST(ShmMismatch, DifferentCountsTypesAndOps) {
  if (make_shm()->size() == 1) GTEST_SKIP() << "needs 2 or more ranks";
  std::vector<double> v(200000, 1.0);  // rank 0's is a pipelined allreduce, rank 1's a small one
  const bool zero = make_shm()->rank() == 0;
  {
    auto c = make_shm();
    expect_mismatch(
        *c, [&] { c->allreduce(v.data(), v.data(), zero ? v.size() : 5, DataType::kFloat64, ReduceOp::kSum); },
        "rank 0 allreduce #0 (200000 x float64 sum", "rank 1 allreduce #0 (5 x float64 sum");
  }
  {
    auto c = make_shm();
    expect_mismatch(
        *c, [&] { c->allreduce(v.data(), v.data(), 8, DataType::kFloat64, zero ? ReduceOp::kMax : ReduceOp::kSum); },
        "rank 0 allreduce #0 (8 x float64 max", "rank 1 allreduce #0 (8 x float64 sum");
  }
  {
    auto c = make_shm();
    expect_mismatch(
        *c, [&] { c->broadcast(v.data(), 8, zero ? DataType::kInt64 : DataType::kFloat64, zero ? 0 : 1); },
        "rank 0 broadcast #0 (8 x int64 root 0", "rank 1 broadcast #0 (8 x float64 root 1");
  }
}

TEST(ShmArguments, ValidatedBeforeAnythingMoves) {
  auto c = make_shm();
  float x = 0;
  EXPECT_THROW(c->allreduce(nullptr, &x, 1, DataType::kFloat32, ReduceOp::kSum), Error);
  EXPECT_THROW(c->broadcast(&x, 1, DataType::kFloat32, c->size()), Error);
  // Nothing was issued: the communicator still works.
  float y = 1;
  c->allreduce(&y, &y, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(y, static_cast<float>(c->size()));
}

}  // namespace
}  // namespace mirror::coll::testing
