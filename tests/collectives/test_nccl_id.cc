// test_nccl_id.cc — the NCCL bootstrap without a GPU: the unique id made on the root reaches every rank
// byte for byte (each rank's copy is gathered with the host backend and compared).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/coll/nccl_id.h"
#include "mirror/error.h"

namespace mirror::coll {
namespace {

void check_id_from(int root) {
  auto comm = make_communicator();
  const int n = comm->size();
  const std::vector<std::uint8_t> id = broadcast_nccl_unique_id(root);
  ASSERT_EQ(id.size(), 128u);
  // A real id is not all zeros.
  EXPECT_TRUE(std::any_of(id.begin(), id.end(), [](std::uint8_t b) { return b != 0; }));
  std::vector<std::uint8_t> all(id.size() * static_cast<std::size_t>(n));
  // 128 bytes as 32 int32 elements.
  comm->allgather(id.data(), all.data(), id.size() / 4, DataType::kInt32);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(0, std::memcmp(all.data() + r * id.size(), all.data() + root * id.size(), id.size()))
        << "rank " << r << " received a different id from root " << root;
  }
}

TEST(NcclId, ReachesEveryRankByteForByte) {
  if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL";
  check_id_from(0);
}

TEST(NcclId, FromTheLastRank) {
  if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL";
  auto comm = make_communicator();
  check_id_from(comm->size() - 1);
}

TEST(NcclId, RootOutOfRangeOrNoNcclIsInvalid) {
  if (!nccl_built()) {
    EXPECT_THROW(broadcast_nccl_unique_id(0), Error);
    return;
  }
  try {
    broadcast_nccl_unique_id(-1);
    ADD_FAILURE() << "root -1 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
}

}  // namespace
}  // namespace mirror::coll
