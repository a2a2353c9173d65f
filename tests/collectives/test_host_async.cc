// test_host_async.cc — host backend: async collectives (several outstanding, waited out of order, mixed
// with blocking calls) and argument validation errors.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/device.h"
#include "mirror/error.h"

namespace mirror::coll::testing {
namespace {

std::unique_ptr<Communicator> make_host() {
  CommOptions o;
  o.timeout = std::chrono::seconds(60);
  return make_communicator(o);
}

TEST(HostAsync, OutstandingOpsWaitedOutOfOrder) {
  auto c = make_host();
  const int n = c->size(), r = c->rank();
  constexpr int kOps = 6;
  const std::size_t counts[kOps] = {1, 7, 1000, 30000, 0, 5};
  std::vector<std::vector<double>> bufs(kOps);
  std::vector<Work> works;
  for (int k = 0; k < kOps; ++k) {
    bufs[k].resize(counts[k]);
    for (std::size_t i = 0; i < counts[k]; ++i) bufs[k][i] = test_input(ReduceOp::kSum, r, i + k, n);
    works.push_back(c->allreduce_async(bufs[k].data(), bufs[k].data(), counts[k], DataType::kFloat64, ReduceOp::kSum));
  }
  // A blocking call in between runs after the queued ones.
  std::int64_t token = r;
  c->allreduce(&token, &token, 1, DataType::kInt64, ReduceOp::kSum);
  EXPECT_EQ(token, static_cast<std::int64_t>(n) * (n - 1) / 2);
  for (int k = kOps - 1; k >= 0; --k) {
    works[k].wait();
    EXPECT_TRUE(works[k].done());
    for (std::size_t i = 0; i < counts[k]; ++i)
      ASSERT_EQ(bufs[k][i], test_reference(ReduceOp::kSum, i + k, n)) << "op " << k << " element " << i;
  }
  works[0].wait();  // waiting twice is fine
}

TEST(HostAsync, EveryAsyncOp) {
  auto c = make_host();
  const int n = c->size(), r = c->rank();
  const std::size_t count = 11;
  std::vector<float> ar(count), bc(count), ag(count * n), rs_in(count * n), rs(count);
  for (std::size_t i = 0; i < count; ++i) {
    ar[i] = static_cast<float>(test_input(ReduceOp::kMax, r, i, n));
    bc[i] = r == 0 ? static_cast<float>(i) : -1.0f;
    ag[r * count + i] = static_cast<float>(r * 100 + static_cast<int>(i));
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
    EXPECT_EQ(ar[i], test_reference(ReduceOp::kMax, i, n));
    EXPECT_EQ(bc[i], static_cast<float>(i));
    EXPECT_EQ(rs[i], test_reference(ReduceOp::kSum, r * count + i, n));
    for (int q = 0; q < n; ++q) EXPECT_EQ(ag[q * count + i], static_cast<float>(q * 100 + static_cast<int>(i)));
  }
}

TEST(HostAsync, WithoutProgressThreadAsyncRunsInline) {
  CommOptions o;
  o.timeout = std::chrono::seconds(60);
  o.progress_thread = false;  // what MPI below MPI_THREAD_MULTIPLE gets
  auto c = make_communicator(o);
  const int n = c->size(), r = c->rank();
  std::vector<std::int32_t> a(1000), b(7);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int32_t>(test_input(ReduceOp::kMin, r, i, n));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int32_t>(test_input(ReduceOp::kProd, r, i, n));
  Work wa = c->allreduce_async(a.data(), a.data(), a.size(), DataType::kInt32, ReduceOp::kMin);
  Work wb = c->allreduce_async(b.data(), b.data(), b.size(), DataType::kInt32, ReduceOp::kProd);
  EXPECT_TRUE(wa.done());  // completed before returning
  EXPECT_TRUE(wb.done());
  wb.wait();
  wa.wait();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], test_reference(ReduceOp::kMin, i, n)) << i;
  for (std::size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], test_reference(ReduceOp::kProd, i, n)) << i;
}

TEST(HostAsync, DefaultWorkIsDone) {
  Work w;
  EXPECT_TRUE(w.done());
  w.wait();
}

// Every rank makes the same bad call, so the error is raised everywhere and nothing is left half-done.
template <typename F>
void expect_invalid(F&& f, const char* needle) {
  try {
    f();
    ADD_FAILURE() << "expected kInvalidArgument mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(HostArguments, BadCallsAreRejectedAndTheCommunicatorStaysUsable) {
  auto c = make_host();
  const int n = c->size();
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  std::vector<float> big(4 * n);
  expect_invalid([&] { c->allreduce(nullptr, y, 4, DataType::kFloat32, ReduceOp::kSum); }, "null");
  expect_invalid([&] { c->allreduce(x, nullptr, 4, DataType::kFloat32, ReduceOp::kSum); }, "null");
  expect_invalid([&] { c->allreduce_async(x, y, 4, static_cast<DataType>(42), ReduceOp::kSum); }, "data type");
  expect_invalid([&] { c->allreduce(x, y, 4, DataType::kFloat32, static_cast<ReduceOp>(9)); }, "reduction");
  expect_invalid([&] { c->reduce_scatter(big.data(), y, 1, DataType::kInt32, static_cast<ReduceOp>(-1)); }, "reduction");
  expect_invalid([&] { c->broadcast(x, 4, DataType::kFloat32, n); }, "root");
  expect_invalid([&] { c->broadcast(x, 4, DataType::kFloat32, -1); }, "root");
  expect_invalid([&] { c->broadcast(nullptr, 4, DataType::kFloat32, 0); }, "null");
  expect_invalid([&] { c->allreduce(x, x + 1, 3, DataType::kFloat32, ReduceOp::kSum); }, "overlap");
  expect_invalid([&] { c->allgather(nullptr, big.data(), 4, DataType::kFloat32); }, "null");
  // Count 0 with null buffers is valid and moves nothing.
  c->allreduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum);
  c->allgather(nullptr, nullptr, 0, DataType::kInt64);
  c->reduce_scatter(nullptr, nullptr, 0, DataType::kBFloat16, ReduceOp::kAvg);
  c->broadcast(nullptr, 0, DataType::kFloat16, 0);
  // Still usable.
  EXPECT_TRUE(check_allreduce(*c, false, DataType::kFloat32, ReduceOp::kSum, 7, false));
}

TEST(HostArguments, NcclBackendWithoutGpuIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  CommOptions o;
  o.backend = parse_backend("nccl");
  try {
    auto c = make_communicator(o);
    ADD_FAILURE() << "make_communicator(nccl) succeeded without a GPU";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kInvalidArgument) << e.what();
    const std::string what = e.what();
    EXPECT_TRUE(what.find("GPU") != std::string::npos || what.find("CUDA") != std::string::npos) << what;
  }
}

TEST(HostArguments, ParseNames) {
  EXPECT_EQ(parse_backend("host"), nullptr);  // host buffers, chosen automatically
  ASSERT_NE(parse_backend("nccl"), nullptr);
  EXPECT_STREQ(parse_backend("nccl")->name, "nccl");
  EXPECT_EQ(parse_backend("nccl")->buffers, Buffers::kDevice);
  EXPECT_STREQ(parse_backend("host", "shm")->name, "shm");
  EXPECT_EQ(parse_backend("host", "shm")->buffers, Buffers::kHost);
  try {
    parse_backend("gloo");
    ADD_FAILURE() << "parse_backend(gloo) succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected host or nccl"), std::string::npos) << e.what();
  }
  try {
    parse_backend("host", "tcp");
    ADD_FAILURE() << "parse_backend(host, tcp) succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected auto, shm, hierarchical or mpi"), std::string::npos) << e.what();
  }
  // A device backend is not a host transport, nor the other way round.
  EXPECT_THROW(parse_backend("host", "nccl"), Error);
  EXPECT_THROW(parse_backend("shm"), Error);
  // Every row has a name, and the host rows come first in the order auto tries them.
  std::vector<std::string> names;
  for (const BackendInfo* b : backends()) names.push_back(b->name);
  EXPECT_EQ(names, (std::vector<std::string>{"shm", "hierarchical", "mpi", "nccl"}));
  EXPECT_EQ(parse_dtype("bf16"), DataType::kBFloat16);
  EXPECT_THROW(parse_dtype("float8"), Error);
  EXPECT_EQ(parse_reduce_op("prod"), ReduceOp::kProd);
  EXPECT_THROW(parse_reduce_op("xor"), Error);
}

}  // namespace
}  // namespace mirror::coll::testing
