// skipped_collective.h — the "rank 0 skips collective #1" scenarios that the timeout tests of every host
// transport run (test_timeout.cc, test_shm_timeout.cc): #0 is a 4-element allreduce on every rank, then
// the other ranks issue #1 without rank 0, blocking or async, and `expect` checks the error each of them
// gets. Rank 0 returns at once (it is next seen in another test's set-up).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll::testing {

// Blocking #1. With `then_refused`, also checks that the failed communicator refuses a barrier, naming
// the earlier failure.
inline void run_skipped_blocking(Communicator& c, const std::function<void(const Error&)>& expect,
                                 bool then_refused) {
  float v[4] = {1, 1, 1, 1};
  c.allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);  // #0: everyone
  EXPECT_EQ(v[0], static_cast<float>(c.size()));
  if (c.rank() == 0) return;  // rank 0 skips #1
  try {
    c.allreduce(v, v, 4, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "allreduce without rank 0 did not time out";
  } catch (const Error& e) {
    expect(e);
  }
  if (!then_refused) return;
  try {
    c.barrier();
    ADD_FAILURE() << "barrier on a failed communicator succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("earlier failure"), std::string::npos) << e.what();
  }
}

// Async #1: the error comes out of Work::wait().
inline void run_skipped_async(Communicator& c, const std::function<void(const Error&)>& expect) {
  std::int32_t v[4] = {1, 2, 3, 4};
  c.allreduce(v, v, 4, DataType::kInt32, ReduceOp::kMax);  // #0
  if (c.rank() == 0) return;
  Work w = c.allreduce_async(v, v, 4, DataType::kInt32, ReduceOp::kMax);
  try {
    w.wait();
    ADD_FAILURE() << "async allreduce without rank 0 did not time out";
  } catch (const Error& e) {
    expect(e);
  }
}

}  // namespace mirror::coll::testing
