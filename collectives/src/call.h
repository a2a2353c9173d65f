// call.h — CollectiveCall: one collective as the caller asked for it (kind, buffers, count, type, op,
// root, sequence number), its one-line description for error messages, validate_call(), the single
// choke point every backend passes each call through before it moves a byte, and CallFingerprint, the
// 32-byte wire form of a call that ranks compare to detect mismatched collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mirror/coll/types.h"
#include "mirror/error.h"

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

// What every rank must agree on for one collective, in a fixed 32-byte wire layout (same-architecture
// ranks: host byte order). Sent ahead of a collective's first message on each channel and in failure
// notices; `magic` tells a fingerprint from stray bytes.
struct CallFingerprint {
  static constexpr std::uint32_t kMagic = 0x4d495246;  // "MIRF"
  std::uint32_t magic = kMagic;
  std::uint8_t kind = 0, type = 0, op = 0, flags = 0;  // flags: 1 = valid (a call is in progress)
  std::int32_t root = 0;
  std::int32_t from_rank = -1;
  std::uint64_t count = 0;
  std::uint64_t seq = 0;

  bool valid() const { return magic == kMagic && (flags & 1) != 0; }
  // Same collective: kind, type, op (when it reduces), root (broadcast), count and seq.
  bool same_call(const CallFingerprint& other) const;
  // "allreduce float32 x 1000 sum", "broadcast float32 x 10 root 0", "barrier"; with_seq adds " #12".
  std::string describe(bool with_seq = false) const;
};
static_assert(sizeof(CallFingerprint) == 32, "CallFingerprint is a 32-byte wire format");

CallFingerprint fingerprint(const CollectiveCall& call, int from_rank);

// "ranks issued mismatched collectives at #12: rank 0 allreduce float32 x 1000 sum, rank 1 allreduce
// float32 x 999 sum" from what each rank (sorted, one entry per rank) said it was running; an entry whose
// seq differs from `seq` carries its own " #n".
std::string mismatch_message(std::uint64_t seq, std::vector<CallFingerprint> calls);

// kInvalidArgument thrown by the consistency check: `theirs` (from peer theirs.from_rank) differs from `mine`.
class MismatchError : public Error {
 public:
  MismatchError(const CallFingerprint& mine, const CallFingerprint& theirs, std::string message, const char* file,
                int line)
      : Error(ErrorKind::kInvalidArgument, std::move(message), file, line), mine_(mine), theirs_(theirs) {}
  const CallFingerprint& mine() const { return mine_; }
  const CallFingerprint& theirs() const { return theirs_; }

 private:
  CallFingerprint mine_, theirs_;
};

// kTimeout thrown by a transport that knows which peer it was waiting for (-1: none / unknown).
class PeerTimeoutError : public Error {
 public:
  PeerTimeoutError(int recv_peer, int send_peer, std::string message, const char* file, int line)
      : Error(ErrorKind::kTimeout, std::move(message), file, line), recv_peer_(recv_peer), send_peer_(send_peer) {}
  int recv_peer() const { return recv_peer_; }
  int send_peer() const { return send_peer_; }

 private:
  int recv_peer_, send_peer_;
};

// Throws mirror::Error(kInvalidArgument) naming the call and what was wrong: unknown dtype or op, null
// buffer with count > 0, root out of range, a size that overflows, or partly overlapping buffers that are
// neither the same nor the documented in-place layout.
void validate_call(const CollectiveCall& call, int comm_rank, int comm_size);

}  // namespace mirror::coll::detail
