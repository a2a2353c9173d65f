// collective_checks.h — the collective test cases shared by the host and NCCL test binaries: each case
// fills exact-sum inputs (small integers, so float sums are exact), runs one collective (out-of-place or
// in-place) and compares every element with a serial reference computed on this rank, zero tolerance.
// Buffers live on the host or, for the NCCL backend, on the device (DeviceBuffer) with a host mirror.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/coll/device.h"
#include "mirror/coll/types.h"

namespace mirror::coll::testing {

// Input element i of `rank` for `op` over n ranks: an integer. For avg the values are multiples of n so
// the average is exact in every type (the integer truncation rule has its own test).
double test_input(ReduceOp op, int rank, std::size_t i, int n);
// Serial reference: the reduction over ranks 0..n-1 of test_input (avg divided by n).
double test_reference(ReduceOp op, std::size_t i, int n);

void put(void* buf, std::size_t i, DataType type, double v);
double get(const void* buf, std::size_t i, DataType type);

// Host storage, mirrored on the device when `device`.
class TestBuffer {
 public:
  TestBuffer(bool device, std::size_t bytes);
  std::vector<unsigned char> host;
  void* ptr();  // what the communicator is given
  void upload();
  void download();

 private:
  std::unique_ptr<DeviceBuffer> dev_;
};

// Each returns success, or a failure naming the case and the first wrong element.
::testing::AssertionResult check_allreduce(Communicator& c, bool device, DataType t, ReduceOp op, std::size_t count,
                                           bool in_place);
::testing::AssertionResult check_broadcast(Communicator& c, bool device, DataType t, std::size_t count, int root);
::testing::AssertionResult check_allgather(Communicator& c, bool device, DataType t, std::size_t count, bool in_place);
::testing::AssertionResult check_reduce_scatter(Communicator& c, bool device, DataType t, ReduceOp op,
                                                std::size_t count, bool in_place);

inline const std::vector<DataType>& all_dtypes() {
  static const std::vector<DataType> v = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                          DataType::kBFloat16, DataType::kInt32,   DataType::kInt64};
  return v;
}
inline const std::vector<ReduceOp>& all_ops() {
  static const std::vector<ReduceOp> v = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                                          ReduceOp::kProd};
  return v;
}
inline const std::vector<std::size_t>& small_counts() {
  static const std::vector<std::size_t> v = {0, 1, 7, 1000};
  return v;
}
// The consistency check's verdict on a mismatch, for any backend: on a fresh communicator `c`, a good
// barrier (#0), then `call` (#1; `odd` is true on rank `odd_rank` alone), then a barrier. Every rank must
// fail (inside either barrier or the call: a rank whose own call completed, e.g. a broadcast root, learns
// it at the next one; one still finishing barrier #0 when a notice arrives fails there) with
// kInvalidArgument "ranks issued mismatched collectives at #1:" and every fragment in `fragments`.
void expect_mismatch_everywhere(Communicator& c, int odd_rank, const std::function<void(Communicator&, bool odd)>& call,
                                const std::vector<std::string>& fragments);

// The entries of /dev/shm whose name starts as the shared-memory transport's names for process `pid`
// ("mirror-shm-<pid>-"): its segment and its shared buffers' parts.
std::vector<std::string> shm_entries_of(long pid);

// Above the host backend's 64 KiB small-message threshold and not divisible by 2, 3 or 4.
constexpr std::size_t kLargeCount = 1000003;

}  // namespace mirror::coll::testing
