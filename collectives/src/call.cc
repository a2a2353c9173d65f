// call.cc — CollectiveCall description and validate_call(), the argument choke point of every backend.
#include "call.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "mirror/error.h"

namespace mirror::coll::detail {
namespace {

bool valid_dtype(DataType t) {
  const int v = static_cast<int>(t);
  return v >= static_cast<int>(DataType::kFloat32) && v <= static_cast<int>(DataType::kInt64);
}
bool valid_op(ReduceOp op) {
  const int v = static_cast<int>(op);
  return v >= static_cast<int>(ReduceOp::kSum) && v <= static_cast<int>(ReduceOp::kProd);
}

// Byte ranges [a, a+an) and [b, b+bn) overlap.
bool overlap(const void* a, std::size_t an, const void* b, std::size_t bn) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return an > 0 && bn > 0 && pa < pb + bn && pb < pa + an;
}

}  // namespace

const char* to_string(CallKind kind) {
  switch (kind) {
    case CallKind::kAllreduce: return "allreduce";
    case CallKind::kBroadcast: return "broadcast";
    case CallKind::kAllgather: return "allgather";
    case CallKind::kReduceScatter: return "reduce_scatter";
    case CallKind::kBarrier: return "barrier";
  }
  return "collective";
}

std::size_t CollectiveCall::total_bytes(int comm_size) const {
  if (kind == CallKind::kBarrier || !valid_dtype(type)) return 0;
  std::size_t n = count * dtype_size(type);
  if (kind == CallKind::kAllgather || kind == CallKind::kReduceScatter) n *= static_cast<std::size_t>(comm_size);
  return n;
}

std::string CollectiveCall::describe(int comm_size) const {
  std::ostringstream s;
  s << to_string(kind) << " #" << seq;
  if (kind == CallKind::kBarrier) return s.str();
  s << " (" << count << " x " << (valid_dtype(type) ? to_string(type) : "?");
  if (reduces()) s << " " << (valid_op(op) ? to_string(op) : "?");
  if (kind == CallKind::kBroadcast) s << " root " << root;
  s << ", " << total_bytes(comm_size) << " bytes)";
  return s.str();
}

bool CallFingerprint::same_call(const CallFingerprint& o) const {
  if (kind != o.kind || seq != o.seq) return false;
  if (kind == static_cast<std::uint8_t>(CallKind::kBarrier)) return true;
  if (type != o.type || count != o.count) return false;
  const auto k = static_cast<CallKind>(kind);
  if ((k == CallKind::kAllreduce || k == CallKind::kReduceScatter) && op != o.op) return false;
  return k != CallKind::kBroadcast || root == o.root;
}

std::string CallFingerprint::describe(bool with_seq) const {
  const auto k = static_cast<CallKind>(kind);
  std::ostringstream s;
  s << to_string(k);
  if (with_seq) s << " #" << seq;
  if (k == CallKind::kBarrier) return s.str();
  const auto t = static_cast<DataType>(type);
  s << " " << (valid_dtype(t) ? to_string(t) : "?") << " x " << count;
  if (k == CallKind::kAllreduce || k == CallKind::kReduceScatter) {
    const auto o = static_cast<ReduceOp>(op);
    s << " " << (valid_op(o) ? to_string(o) : "?");
  }
  if (k == CallKind::kBroadcast) s << " root " << root;
  return s.str();
}

CallFingerprint fingerprint(const CollectiveCall& call, int from_rank) {
  CallFingerprint f;
  f.kind = static_cast<std::uint8_t>(call.kind);
  f.type = static_cast<std::uint8_t>(call.type);
  f.op = static_cast<std::uint8_t>(call.op);
  f.flags = 1;
  f.root = call.root;
  f.from_rank = from_rank;
  f.count = call.count;
  f.seq = call.seq;
  return f;
}

std::string mismatch_message(std::uint64_t seq, std::vector<CallFingerprint> calls) {
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.from_rank < b.from_rank; });
  std::ostringstream s;
  s << "ranks issued mismatched collectives at #" << seq << ":";
  const char* sep = " ";
  for (const auto& c : calls) {
    s << sep << "rank " << c.from_rank << " " << c.describe(c.seq != seq);
    sep = ", ";
  }
  return s.str();
}

void validate_call(const CollectiveCall& call, int comm_rank, int comm_size) {
  if (call.kind == CallKind::kBarrier) return;
  MIRROR_CHECK(valid_dtype(call.type), kInvalidArgument,
               to_string(call.kind) << ": unsupported data type value " << static_cast<int>(call.type)
                                    << "; expected float32, float64, float16, bfloat16, int32 or int64");
  if (call.reduces()) {
    MIRROR_CHECK(valid_op(call.op), kInvalidArgument,
                 to_string(call.kind) << ": unsupported reduction value " << static_cast<int>(call.op) << " for "
                                      << to_string(call.type) << "; expected sum, avg, min, max or prod");
  }
  if (call.kind == CallKind::kBroadcast) {
    MIRROR_CHECK(call.root >= 0 && call.root < comm_size, kInvalidArgument,
                 call.describe(comm_size) << ": root " << call.root << " is out of range; expected 0.." << comm_size - 1);
  }
  const std::size_t esize = dtype_size(call.type);
  const std::size_t n = static_cast<std::size_t>(comm_size);
  MIRROR_CHECK(call.count <= std::numeric_limits<std::size_t>::max() / esize / n, kInvalidArgument,
               call.describe(comm_size) << ": count " << call.count << " overflows the byte size");
  if (call.count == 0) return;
  MIRROR_CHECK(call.send != nullptr, kInvalidArgument,
               call.describe(comm_size) << ": " << (call.kind == CallKind::kBroadcast ? "buffer" : "send buffer")
                    << " is null with count " << call.count << " > 0");
  MIRROR_CHECK(call.recv != nullptr, kInvalidArgument, call.describe(comm_size) << ": recv buffer is null with count " << call.count << " > 0");

  // Buffer extents, and the one in-place layout each call accepts.
  std::size_t send_bytes = call.count * esize, recv_bytes = call.count * esize;
  const auto* recv_bytes_base = static_cast<const unsigned char*>(call.recv);
  const void* in_place_send = call.recv;
  if (call.kind == CallKind::kAllgather) {
    recv_bytes *= n;
    in_place_send = recv_bytes_base + static_cast<std::size_t>(comm_rank) * call.count * esize;
  } else if (call.kind == CallKind::kReduceScatter) {
    send_bytes *= n;
    // In place when recv == send + rank * recv_count: compare the other way round.
    const auto* send_base = static_cast<const unsigned char*>(call.send);
    if (call.recv == send_base + static_cast<std::size_t>(comm_rank) * call.count * esize) return;
    MIRROR_CHECK(!overlap(call.send, send_bytes, call.recv, recv_bytes), kInvalidArgument,
                 call.describe(comm_size) << ": send and recv buffers overlap but recv is not send + rank * recv_count (in place)");
    return;
  }
  if (call.send == in_place_send) return;
  MIRROR_CHECK(!overlap(call.send, send_bytes, call.recv, recv_bytes), kInvalidArgument,
               call.describe(comm_size) << ": send and recv buffers overlap but are not the in-place layout"
                    << (call.kind == CallKind::kAllgather ? " (send == recv + rank * count)" : " (send == recv)"));
}

}  // namespace mirror::coll::detail
