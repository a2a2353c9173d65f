// host_16bit.cc — 16-bit reduce-scatter/allreduce over a Transport with 16-bit bytes on the wire and float32
// accumulation (host_16bit.h).
#include "host_16bit.h"

#include <cstdint>
#include <vector>

#include "shm_reduce.h"

namespace mirror::coll::detail {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }
const unsigned char* at(const void* p, std::size_t elems) { return static_cast<const unsigned char*>(p) + elems * 2; }
unsigned char* at(void* p, std::size_t elems) { return static_cast<unsigned char*>(p) + elems * 2; }

}  // namespace

void reduce_scatter_16bit(Transport& t, Workspace& ws, const void* in, void* out, const ChunkLayout& chunks,
                          DataType type, ReduceOp op, const OpContext& ctx) {
  const int n = t.size(), r = t.rank();
  const std::size_t mine = chunks.count[static_cast<std::size_t>(r)];
  // received[q]: rank q's copy of block r (slot r itself is unused: that block is read from `in`).
  unsigned char* received = ws.get(2, static_cast<std::size_t>(n) * mine * 2);
  for (int s = 1; s < n; ++s) {
    const int to = mod(r + s, n), from = mod(r - s, n);
    const auto b = static_cast<std::size_t>(to);
    t.sendrecv(to, at(in, chunks.offset[b]), chunks.count[b] * 2, from,
               received + static_cast<std::size_t>(from) * mine * 2, mine * 2, ctx);
  }
  std::vector<const void*> srcs(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) {
    srcs[static_cast<std::size_t>(q)] =
        q == r ? static_cast<const void*>(at(in, chunks.offset[static_cast<std::size_t>(r)]))
               : static_cast<const void*>(received + static_cast<std::size_t>(q) * mine * 2);
  }
  shm_reduce(out, nullptr, srcs.data(), n, mine, type, op, n);
}

void allreduce_16bit(Transport& t, Workspace& ws, const void* in, void* buf, std::size_t count, DataType type,
                     ReduceOp op, const OpContext& ctx) {
  const ChunkLayout chunks = even_chunks(count, t.size());
  const auto r = static_cast<std::size_t>(t.rank());
  reduce_scatter_16bit(t, ws, in, at(buf, chunks.offset[r]), chunks, type, op, ctx);
  allgather_ring(t, ws, buf, chunks, 2, ctx);
}

}  // namespace mirror::coll::detail
