// test_runtime.cc — MpiRuntime: world/local ranks agree with a count made by every rank.
#include <gtest/gtest.h>

#include <cstdlib>

#include "mirror/coll/runtime.h"

using mirror::coll::MpiRuntime;

TEST(Runtime, RanksAreInRange) {
  EXPECT_GE(MpiRuntime::world_rank(), 0);
  EXPECT_LT(MpiRuntime::world_rank(), MpiRuntime::world_size());
  EXPECT_GE(MpiRuntime::local_rank(), 0);
  EXPECT_LT(MpiRuntime::local_rank(), MpiRuntime::local_size());
  // The ranks on this machine as MPI counts them (shared-memory split) are those Open MPI's launcher placed
  // here: all of them on one machine, 2 of 4 on each host of the test cluster (tests/cluster).
  if (const char* size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    EXPECT_EQ(MpiRuntime::local_size(), std::atoi(size));
    EXPECT_EQ(MpiRuntime::local_rank(), std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
  }
}

TEST(Runtime, AgreedExitCodeIsTheMaximum) {
  // Each rank offers its rank number; the agreed code is the largest, world_size - 1.
  EXPECT_EQ(mirror::coll::agree_exit_code(MpiRuntime::world_rank()), MpiRuntime::world_size() - 1);
}
