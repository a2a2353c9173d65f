// host_algorithms.cc — ring, recursive-doubling, binomial-tree and dissemination algorithms over Transport.
#include "host_algorithms.h"

#include <cstring>
#include <vector>

#include "reduce.h"

namespace mirror::coll::detail {
namespace {

unsigned char* at(void* base, std::size_t elems, std::size_t esize) {
  return static_cast<unsigned char*>(base) + elems * esize;
}
int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

ChunkLayout even_chunks(std::size_t count, int n) {
  ChunkLayout c;
  const std::size_t nn = static_cast<std::size_t>(n), base = count / nn, extra = count % nn;
  std::size_t off = 0;
  for (std::size_t i = 0; i < nn; ++i) {
    const std::size_t len = base + (i < extra ? 1 : 0);
    c.offset.push_back(off);
    c.count.push_back(len);
    off += len;
  }
  c.max_count = base + (extra ? 1 : 0);
  return c;
}

void allreduce(Transport& t, Workspace& ws, void* buf, std::size_t count, DataType type, ReduceOp op, const OpContext& ctx) {
  if (t.size() == 1 || count == 0) return;
  if (count * dtype_size(type) <= kSmallAllreduceBytes || count < static_cast<std::size_t>(t.size())) {
    allreduce_recursive_doubling(t, ws, buf, count, type, op, ctx);
  } else {
    allreduce_ring(t, ws, buf, count, type, op, ctx);
  }
}

void allreduce_recursive_doubling(Transport& t, Workspace& ws, void* buf, std::size_t count, DataType type, ReduceOp op,
                                  const OpContext& ctx) {
  const int n = t.size(), r = t.rank();
  const std::size_t bytes = count * dtype_size(type);
  unsigned char* tmp = ws.get(0, bytes);
  int pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  const int rem = n - pow2;
  // Fold: among the first 2*rem ranks, each even rank hands its data to the next odd rank and sits out.
  int vrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      t.send(r + 1, buf, bytes, ctx);
      vrank = -1;
    } else {
      t.recv(r - 1, tmp, bytes, ctx);
      reduce_into(buf, tmp, count, type, op);
      vrank = r / 2;
    }
  } else {
    vrank = r - rem;
  }
  if (vrank >= 0) {
    for (int mask = 1; mask < pow2; mask <<= 1) {
      const int vpeer = vrank ^ mask;
      const int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      t.sendrecv(peer, buf, bytes, peer, tmp, bytes, ctx);
      reduce_into(buf, tmp, count, type, op);  // a op b == b op a: both partners end bit-identical
    }
  }
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      t.recv(r + 1, buf, bytes, ctx);
    } else {
      t.send(r - 1, buf, bytes, ctx);
    }
  }
  finish_reduction(buf, count, type, op, n);
}

void reduce_scatter_ring(Transport& t, Workspace& ws, const void* in, void* buf, const ChunkLayout& chunks,
                         DataType type, ReduceOp op, const OpContext& ctx) {
  const int n = t.size(), r = t.rank();
  const std::size_t es = dtype_size(type);
  unsigned char* tmp = ws.get(0, chunks.max_count * es);
  const auto* src = static_cast<const unsigned char*>(in);
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  // Step s: send chunk r-s-1 (our own input at s = 0, else the partial result of step s-1), receive
  // chunk r-s-2 and combine it with our input. Each chunk is combined once; after n-1 steps the last
  // chunk received is chunk r, holding all n contributions.
  for (int s = 0; s < n - 1; ++s) {
    const int sc = mod(r - s - 1, n), rc = mod(r - s - 2, n);
    const unsigned char* from = s == 0 ? src + chunks.offset[sc] * es : at(buf, chunks.offset[sc], es);
    t.sendrecv(right, from, chunks.count[sc] * es, left, tmp, chunks.count[rc] * es, ctx);
    reduce(at(buf, chunks.offset[rc], es), src + chunks.offset[rc] * es, tmp, chunks.count[rc], type, op);
  }
}

void allgather_ring(Transport& t, Workspace& ws, void* buf, const ChunkLayout& chunks, std::size_t es, const OpContext& ctx) {
  const int n = t.size(), r = t.rank();
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    const int sc = mod(r - s, n), rc = mod(r - s - 1, n);
    t.sendrecv(right, at(buf, chunks.offset[sc], es), chunks.count[sc] * es, left, at(buf, chunks.offset[rc], es),
               chunks.count[rc] * es, ctx);
  }
}

void allreduce_ring(Transport& t, Workspace& ws, void* buf, std::size_t count, DataType type, ReduceOp op,
                    const OpContext& ctx) {
  allreduce_ring(t, ws, buf, buf, count, type, op, ctx);
}

void allreduce_ring(Transport& t, Workspace& ws, const void* in, void* buf, std::size_t count, DataType type,
                    ReduceOp op, const OpContext& ctx) {
  const ChunkLayout chunks = even_chunks(count, t.size());
  reduce_scatter_ring(t, ws, in, buf, chunks, type, op, ctx);
  const std::size_t es = dtype_size(type);
  const int r = t.rank();
  finish_reduction(at(buf, chunks.offset[r], es), chunks.count[r], type, op, t.size());
  allgather_ring(t, ws, buf, chunks, es, ctx);
}

void broadcast(Transport& t, Workspace& ws, void* buf, std::size_t bytes, int root, const OpContext& ctx) {
  if (t.size() == 1 || bytes == 0) return;
  if (bytes >= kLargeBroadcastBytes && t.size() > 2) {
    broadcast_scatter_allgather(t, ws, buf, bytes, root, ctx);
  } else {
    broadcast_binomial(t, ws, buf, bytes, root, ctx);
  }
}

void broadcast_binomial(Transport& t, Workspace& ws, void* buf, std::size_t bytes, int root, const OpContext& ctx) {
  const int n = t.size();
  const int vr = mod(t.rank() - root, n);
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      t.recv(mod(vr - mask + root, n), buf, bytes, ctx);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < n) t.send(mod(vr + mask + root, n), buf, bytes, ctx);
  }
}

void broadcast_scatter_allgather(Transport& t, Workspace& ws, void* buf, std::size_t bytes, int root, const OpContext& ctx) {
  const int n = t.size(), r = t.rank();
  const ChunkLayout chunks = even_chunks(bytes, n);
  if (r == root) {
    for (int i = 0; i < n; ++i) {
      if (i != root) t.send(i, at(buf, chunks.offset[i], 1), chunks.count[i], ctx);
    }
  } else {
    t.recv(root, at(buf, chunks.offset[r], 1), chunks.count[r], ctx);
  }
  allgather_ring(t, ws, buf, chunks, 1, ctx);
}

void barrier_dissemination(Transport& t, Workspace& ws, const OpContext& ctx) {
  const int n = t.size(), r = t.rank();
  for (int k = 1; k < n; k <<= 1) t.sendrecv(mod(r + k, n), nullptr, 0, mod(r - k, n), nullptr, 0, ctx);
}

}  // namespace mirror::coll::detail
