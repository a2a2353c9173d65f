// test_nccl_collectives.cc — the NCCL backend on device buffers: the same cases as the host backend
// (collective_checks.h), plus async waits out of order. Skipped (GTEST_SKIP) without a GPU or without
// NCCL in the build; scripts/gpu-check.sh runs it where there is one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "collective_checks.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/device.h"
#include "mirror/coll/nccl_id.h"
#include "mirror/coll/runtime.h"

namespace mirror::coll::testing {
namespace {

std::unique_ptr<Communicator>& nccl_slot() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}

// Whether every rank of this host can have a GPU of its own, or NCCL is asked to let ranks share one
// (NCCL 2.30 and later, experimental: NCCL_MULTI_RANK_GPU_ENABLE=1, as on a one-GPU test machine).
bool gpus_for_every_rank() {
  const char* shared = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return cuda_device_count() >= MpiRuntime::local_size() || (shared && std::string(shared) == "1");
}

// Made once, on first use; destroyed when the test program ends, before MPI and CUDA shut down.
Communicator* nccl_comm() {
  static bool tried = false;
  if (!tried) {
    tried = true;
    if (nccl_built() && cuda_device_count() > 0 && gpus_for_every_rank()) {
      CommOptions o;
      o.backend = parse_backend("nccl");
      o.timeout = std::chrono::seconds(60);
      nccl_slot() = make_communicator(o);
    }
  }
  return nccl_slot().get();
}

class NcclEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { nccl_slot().reset(); }
};
[[maybe_unused]] ::testing::Environment* const kNcclEnv = ::testing::AddGlobalTestEnvironment(new NcclEnvironment);

#define NEED_GPU()                                                                           \
  if (!nccl_comm())                                                                          \
    GTEST_SKIP() << "no GPU, no NCCL in this build, or fewer GPUs than ranks on this host";  \
  Communicator& c = *nccl_comm()

class NcclByType : public ::testing::TestWithParam<DataType> {};

TEST_P(NcclByType, Allreduce) {
  NEED_GPU();
  for (ReduceOp op : all_ops())
    for (std::size_t count : small_counts())
      for (bool in_place : {false, true}) EXPECT_TRUE(check_allreduce(c, true, GetParam(), op, count, in_place));
}

TEST_P(NcclByType, ReduceScatter) {
  NEED_GPU();
  for (ReduceOp op : all_ops())
    for (std::size_t count : small_counts())
      for (bool in_place : {false, true}) EXPECT_TRUE(check_reduce_scatter(c, true, GetParam(), op, count, in_place));
}

TEST_P(NcclByType, BroadcastAndAllgather) {
  NEED_GPU();
  for (std::size_t count : small_counts()) {
    for (int root = 0; root < c.size(); ++root) EXPECT_TRUE(check_broadcast(c, true, GetParam(), count, root));
    for (bool in_place : {false, true}) EXPECT_TRUE(check_allgather(c, true, GetParam(), count, in_place));
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, NcclByType, ::testing::ValuesIn(all_dtypes()),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(NcclLarge, NonDivisibleCounts) {
  NEED_GPU();
  EXPECT_TRUE(check_allreduce(c, true, DataType::kFloat32, ReduceOp::kSum, kLargeCount, false));
  EXPECT_TRUE(check_allreduce(c, true, DataType::kBFloat16, ReduceOp::kMax, kLargeCount, true));
  EXPECT_TRUE(check_reduce_scatter(c, true, DataType::kFloat32, ReduceOp::kSum, kLargeCount / 4 + 1, false));
  EXPECT_TRUE(check_allgather(c, true, DataType::kInt64, kLargeCount / 4 + 1, true));
  EXPECT_TRUE(check_broadcast(c, true, DataType::kFloat16, kLargeCount, 0));
}

TEST(NcclAsync, OutOfOrderWaits) {
  NEED_GPU();
  const int n = c.size(), r = c.rank();
  constexpr int kOps = 4;
  const std::size_t count = 4099;
  std::vector<std::unique_ptr<TestBuffer>> bufs;
  std::vector<Work> works;
  for (int k = 0; k < kOps; ++k) {
    bufs.push_back(std::make_unique<TestBuffer>(true, count * sizeof(float)));
    for (std::size_t i = 0; i < count; ++i) put(bufs[k]->host.data(), i, DataType::kFloat32, test_input(ReduceOp::kSum, r, i + k, n));
    bufs[k]->upload();
    works.push_back(c.allreduce_async(bufs[k]->ptr(), bufs[k]->ptr(), count, DataType::kFloat32, ReduceOp::kSum));
  }
  for (int k = kOps - 1; k >= 0; --k) {
    works[k].wait();
    bufs[k]->download();
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(get(bufs[k]->host.data(), i, DataType::kFloat32), test_reference(ReduceOp::kSum, i + k, n));
  }
  c.barrier();
}

}  // namespace
}  // namespace mirror::coll::testing
