// test_runtime.cc — MpiRuntime: world/local ranks agree with a count made by every rank.
#include <gtest/gtest.h>

#include "mirror/coll/runtime.h"

using mirror::coll::MpiRuntime;

TEST(Runtime, RanksAreInRange) {
  EXPECT_GE(MpiRuntime::world_rank(), 0);
  EXPECT_LT(MpiRuntime::world_rank(), MpiRuntime::world_size());
  EXPECT_GE(MpiRuntime::local_rank(), 0);
  EXPECT_LT(MpiRuntime::local_rank(), MpiRuntime::local_size());
  // All ranks of a test job run on this one machine.
  EXPECT_EQ(MpiRuntime::local_size(), MpiRuntime::world_size());
}

TEST(Runtime, AgreedExitCodeIsTheMaximum) {
  // Each rank offers its rank number; the agreed code is the largest, world_size - 1.
  EXPECT_EQ(mirror::coll::agree_exit_code(MpiRuntime::world_rank()), MpiRuntime::world_size() - 1);
}
