// call.h — CollectiveCall: one collective as the caller asked for it (kind, buffers, count, type, op,
// root, sequence number), its one-line description for error messages, and validate_call(), the single
// choke point every backend passes each call through before it moves a byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "mirror/coll/types.h"

namespace mirror::coll::detail {

enum class CallKind { kAllreduce, kBroadcast, kAllgather, kReduceScatter, kBarrier };
const char* to_string(CallKind kind);

struct CollectiveCall {
  CallKind kind = CallKind::kBarrier;
  const void* send = nullptr;  // broadcast: the buffer (== recv)
  void* recv = nullptr;
  // allreduce/broadcast: elements of the buffer; allgather: elements each rank sends;
  // reduce_scatter: elements each rank receives.
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  std::uint64_t seq = 0;  // per-communicator sequence number, the same on every rank

  bool reduces() const { return kind == CallKind::kAllreduce || kind == CallKind::kReduceScatter; }
  // Bytes of the largest buffer involved (what the user thinks of as the collective's size).
  std::size_t total_bytes(int comm_size) const;
  // "allreduce #12 (1000 x float32 sum, 4000 bytes)"
  std::string describe(int comm_size) const;
};

// Throws mirror::Error(kInvalidArgument) naming the call and what was wrong: unknown dtype or op, null
// buffer with count > 0, root out of range, a size that overflows, or partly overlapping buffers that are
// neither the same nor the documented in-place layout.
void validate_call(const CollectiveCall& call, int comm_rank, int comm_size);

}  // namespace mirror::coll::detail
