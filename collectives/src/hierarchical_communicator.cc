// hierarchical_communicator.cc — HierarchicalCommunicator: the two-level algorithms over the inner shm and
// mpi communicators, the two-level consistency check, its construction over split communicators and its
// table row.
#include "hierarchical_communicator.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "host_names.h"
#include "mpi_check.h"
#include "mpi_requests.h"
#include "reduce.h"

namespace mirror::coll::detail {
namespace {

// The pipelined allreduce: pieces of at least kPieceBytes, at most kMaxPieces of them (64 MiB: 16 of 4 MiB;
// below 8 MiB: one piece, as unpipelined). Smaller pieces cost more than they hide (each piece's
// synchronisations, two inside the host and the ring steps across), and larger ones pipeline too little, so
// the count grows with the size, not the piece (figures: docs/multi-node.md, "Over a limited link").
constexpr std::size_t kPieceBytes = std::size_t{4} << 20;
constexpr std::size_t kMaxPieces = 64;  // bounds the bookkeeping; 256 MiB and up take larger pieces

// Allreduces up to kSmallAllreduceBytes take the two-step path (allreduce inside the host, then across
// hosts): fewer latencies matter more than the network bytes there; broadcasts from kLargeBroadcastBytes
// split the message across the local ranks. Both are the host algorithms' own thresholds (host_algorithms.h).

bool thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MIRROR_CHECK_MPI(MPI_Query_thread(&provided));
  return provided == MPI_THREAD_MULTIPLE;
}

// The inner communicators: called from the executing thread only, one at a time, checked by the outer.
CommOptions inner_options(const CommOptions& options) {
  CommOptions inner = options;
  inner.backend = nullptr;
  inner.progress_thread = false;
  inner.check_consistency = false;
  inner.hosts_for_testing = 0;
  return inner;
}

}  // namespace

std::unique_ptr<HierarchicalCommunicator> HierarchicalCommunicator::create(const CommOptions& options,
                                                                           const Topology& t, std::string* why) {
  const int per_host = t.size / t.hosts;
  const int host = t.host(), local = t.rank % per_host;
  MPI_Comm host_comm = MPI_COMM_NULL, cross_comm = MPI_COMM_NULL;
  MIRROR_CHECK_MPI(MPI_Comm_split(t.comm, host, local, &host_comm));
  const int rc = MPI_Comm_split(t.comm, local, host, &cross_comm);
  if (rc != MPI_SUCCESS) MPI_Comm_free(&host_comm);
  MIRROR_CHECK_MPI(rc);
  const CommOptions inner = inner_options(options);
  CommOptions cross_options = inner;  // its own progress thread runs the pipelined allreduce's pieces
  cross_options.progress_thread = options.progress_thread;
  std::unique_ptr<ShmCommunicator> intra;
  std::unique_ptr<MpiCommunicator> cross;
  std::string intra_why;
  try {
    intra = ShmCommunicator::create(host_comm, inner, &intra_why);
    // Every host must have its segment, or no rank goes on (agreed over all ranks).
    int ok = intra ? 1 : 0, all_ok = 0;
    MIRROR_CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, t.comm));
    if (all_ok) cross = std::make_unique<MpiCommunicator>(cross_comm, cross_options);
    if (!all_ok) {
      *why = intra ? "the shared-memory segment of another host could not be made"
                   : "the shared-memory segment of host " + std::to_string(host) + " could not be made: " + intra_why;
    }
  } catch (...) {
    MPI_Comm_free(&host_comm);
    MPI_Comm_free(&cross_comm);
    throw;
  }
  MPI_Comm_free(&host_comm);  // the inner communicators hold duplicates of their own
  MPI_Comm_free(&cross_comm);
  if (!cross) return nullptr;
  return std::make_unique<HierarchicalCommunicator>(options, t, std::move(intra), std::move(cross));
}

HierarchicalCommunicator::HierarchicalCommunicator(const CommOptions& options, const Topology& t,
                                                   std::unique_ptr<ShmCommunicator> intra,
                                                   std::unique_ptr<MpiCommunicator> cross)
    // The inner MPI communicator is called from the progress thread: only with MPI_THREAD_MULTIPLE.
    : QueuedCommunicator(hierarchical_backend().info, t.rank, t.size, options.timeout,
                         options.progress_thread && thread_multiple()),
      options_(options),
      hosts_(t.hosts),
      per_host_(t.size / t.hosts),
      host_(t.host()),
      local_(t.rank % (t.size / t.hosts)),
      intra_(std::move(intra)),
      cross_(std::move(cross)),
      notices_(std::make_unique<MpiNotices>(t.comm)) {  // collective: every rank builds it together
  // A rank waiting across hosts stops as soon as any rank announces a failure, and answers it.
  // Rank k across hosts is world rank k * L + local.
  cross_->serve_as_part([n = notices_.get()] { return n->pending(); },
                        [n = notices_.get(), L = per_host_, l = local_](int k) { return n->heard_from(k * L + l); });
}

HierarchicalCommunicator::~HierarchicalCommunicator() {
  stop_queue();
  if (failed()) notices_->keep_comm_on_destroy();  // abandoned notices stay out of later communicators
  if (cross_->unfinished_transfers() > 0) {  // MPI may still write into these (mpi_requests.h)
    keep_until_exit(std::move(wide_));
    keep_until_exit(std::move(t1_));
    keep_until_exit(std::move(t2_));
  }
}

std::vector<Statistic> HierarchicalCommunicator::statistics() const { return intra_->statistics(); }

Communicator& HierarchicalCommunicator::in_host() {
  const int first = host_ * per_host_;
  stage_ = "shared-memory stage inside host " + std::to_string(host_) + " (world ranks " + std::to_string(first) +
           ".." + std::to_string(first + per_host_ - 1) + "; its rank k is world rank " + std::to_string(first) + "+k)";
  return *intra_;
}

std::string HierarchicalCommunicator::across_hosts_stage() const {
  return "MPI stage between hosts (local rank " + std::to_string(local_) + " of each host; its rank k is host k, "
         "world rank k*" + std::to_string(per_host_) + "+" + std::to_string(local_) + ")";
}

Communicator& HierarchicalCommunicator::across_hosts() {
  stage_ = across_hosts_stage();
  return *cross_;
}

unsigned char* HierarchicalCommunicator::space(std::vector<unsigned char>& v, std::size_t bytes) {
  if (v.size() < bytes) v.resize(bytes);
  return v.data();
}

Error HierarchicalCommunicator::explain(const CollectiveCall& call, const Error& e) {
  std::string stage;
  stage.swap(stage_);
  if (size_ == 1) return e;
  const std::string where = ranks_with_hosts({rank_}, notices_->host_names());
  const Error in_stage(e.kind(), call.describe(size_) + " failed on " + where + " in its " + stage + ": " + e.message(),
                       __FILE__, __LINE__);
  Error explained = explain_collective_failure(*notices_, call, stage.empty() ? e : in_stage, options_.timeout, size_);
  for (Work& w : outstanding_) {  // stopped by the notices now out (or by their own timeout)
    try {
      w.wait();
    } catch (const std::exception&) {  // that piece's failure is part of this one
    }
  }
  outstanding_.clear();
  return explained;
}

void HierarchicalCommunicator::run(const CollectiveCall& call, const OpContext&) {
  if (options_.check_consistency && size_ > 1) agree(call);
  switch (call.kind) {
    case CallKind::kAllreduce: do_allreduce(call); break;
    case CallKind::kBroadcast: do_broadcast(call); break;
    case CallKind::kAllgather: do_allgather(call); break;
    case CallKind::kReduceScatter: do_reduce_scatter(call); break;
    case CallKind::kBarrier:
      in_host().barrier();
      across_hosts().barrier();
      break;
  }
  stage_.clear();
}

void HierarchicalCommunicator::agree(const CollectiveCall& call) {
  // What each rank says in the exchange across hosts: its own call, and the first call of its host that
  // differs from it (its own when the host agrees), so every host learns of a disagreement anywhere.
  struct Said {
    CallFingerprint own, odd;
  };
  static_assert(sizeof(Said) == 8 * sizeof(std::int64_t));
  const CallFingerprint mine = fingerprint(call, rank_);
  // 1. Among the ranks of this host.
  std::vector<CallFingerprint> local(static_cast<std::size_t>(per_host_));
  in_host().allgather(&mine, local.data(), 4, DataType::kInt64);
  Said said{mine, mine};
  for (const CallFingerprint& f : local) {
    if (!mine.same_call(f)) {
      said.odd = f;
      break;
    }
  }
  // 2. Among this local index's peers on every host.
  std::vector<Said> peers(static_cast<std::size_t>(hosts_));
  across_hosts().allgather(&said, peers.data(), 8, DataType::kInt64);
  stage_.clear();
  std::map<int, CallFingerprint> known;  // every rank's call this rank knows of, by rank
  bool agree = true;
  for (const CallFingerprint& f : local) {
    known[f.from_rank] = f;
    agree = agree && mine.same_call(f);
  }
  for (const Said& p : peers) {
    known[p.own.from_rank] = p.own;
    known[p.odd.from_rank] = p.odd;
    agree = agree && mine.same_call(p.own) && mine.same_call(p.odd);
  }
  if (agree) return;
  std::vector<CallFingerprint> calls;
  for (const auto& [r, f] : known) calls.push_back(f);
  MIRROR_THROW(kInvalidArgument, mismatch_message(call.seq, calls)
                                     << " (seen on rank " << rank_ << " in " << call.describe(size_) << ")");
}

void HierarchicalCommunicator::do_allreduce(const CollectiveCall& call) {
  const std::size_t n = call.count;
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  const std::size_t es = dtype_size(acc);
  const ReduceOp op = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;  // divided once at the end
  const void* src = call.send;
  void* dst = call.recv;
  if (acc != call.type) {  // 16-bit: reduce in float32, round once
    auto* f = reinterpret_cast<float*>(space(wide_, n * sizeof(float)));
    widen_to_float(call.send, f, n, call.type);
    src = dst = f;
  }
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const std::size_t q = n / static_cast<std::size_t>(per_host_), main = q * static_cast<std::size_t>(per_host_);
  std::size_t tail_from = 0;  // elements [tail_from, n) take the two-step path
  if (n * es > kSmallAllreduceBytes && q > 0) {
    allreduce_in_pieces(s, d, q, acc, op, call.op);
    tail_from = main;
  }
  if (tail_from < n) {
    in_host().allreduce(s + tail_from * es, d + tail_from * es, n - tail_from, acc, op);
    across_hosts().allreduce(d + tail_from * es, d + tail_from * es, n - tail_from, acc, op);
    finish_reduction(d + tail_from * es, n - tail_from, acc, call.op, size_);
  }
  if (acc != call.type) narrow_from_float(static_cast<const float*>(dst), call.recv, n, call.type);
}

// The large path, pipelined: the first L * q elements in pieces (each of L equal shards), so that piece k's
// all-reduce across hosts (on the inner MPI communicator's progress thread) overlaps the reduce-scatter of
// piece k + 1 and the all-gather of piece k - 1 inside the host. Every element still takes the same
// reduction order as one unpieced pass, so the result does not depend on the piece count.
void HierarchicalCommunicator::allreduce_in_pieces(const unsigned char* s, unsigned char* d, std::size_t q, DataType acc,
                                                   ReduceOp op, ReduceOp call_op) {
  const std::size_t es = dtype_size(acc), L = static_cast<std::size_t>(per_host_);
  const std::size_t pieces = std::clamp<std::size_t>(q * L * es / kPieceBytes, 1, kMaxPieces);
  struct Piece {
    std::size_t begin, count;  // shard elements [begin, begin + count) of q; the piece is L * that range
    unsigned char* shard;
    Work cross;
  };
  std::vector<Piece> ps(pieces);
  for (std::size_t k = 0, begin = 0; k < pieces; ++k) {
    const std::size_t count = q / pieces + (k < q % pieces ? 1 : 0);
    ps[k] = {begin, count, d + (L * begin + static_cast<std::size_t>(local_) * count) * es, Work()};
    begin += count;
  }
  const auto finish = [&](Piece& p) {
    stage_ = across_hosts_stage();
    p.cross.wait();
    finish_reduction(p.shard, p.count, acc, call_op, size_);
    in_host().allgather(p.shard, d + L * p.begin * es, p.count, acc);
  };
  try {
    for (std::size_t k = 0; k < pieces; ++k) {
      Piece& p = ps[k];
      in_host().reduce_scatter(s + L * p.begin * es, p.shard, p.count, acc, op);  // in place when s == d
      p.cross = across_hosts().allreduce_async(p.shard, p.shard, p.count, acc, op);
      if (k > 0) finish(ps[k - 1]);
    }
    finish(ps[pieces - 1]);
  } catch (...) {
    // Pieces still under way across hosts write into the caller's buffer: explain() waits them out once
    // the failure has been announced (which is what stops them).
    for (Piece& p : ps) outstanding_.push_back(std::move(p.cross));
    throw;
  }
}

void HierarchicalCommunicator::do_broadcast(const CollectiveCall& call) {
  const std::size_t n = call.count, es = dtype_size(call.type);
  if (n == 0) return;
  const int root_host = call.root / per_host_, root_local = call.root % per_host_;
  auto* buf = static_cast<unsigned char*>(call.recv);
  const std::size_t q = n / static_cast<std::size_t>(per_host_), main = q * static_cast<std::size_t>(per_host_);
  if (n * es < kLargeBroadcastBytes || q == 0) {
    if (local_ == root_local) across_hosts().broadcast(buf, n, call.type, root_host);
    in_host().broadcast(buf, n, call.type, root_local);
    return;
  }
  if (host_ == root_host) in_host().broadcast(buf, n, call.type, root_local);
  unsigned char* share = buf + static_cast<std::size_t>(local_) * q * es;
  across_hosts().broadcast(share, q, call.type, root_host);
  if (main < n) across_hosts().broadcast(buf + main * es, n - main, call.type, root_host);
  if (host_ != root_host) in_host().allgather(share, buf, q, call.type);
}

void HierarchicalCommunicator::do_allgather(const CollectiveCall& call) {
  const std::size_t n = call.count, es = dtype_size(call.type), block = n * es;
  if (n == 0) return;
  const std::size_t H = static_cast<std::size_t>(hosts_), L = static_cast<std::size_t>(per_host_);
  unsigned char* by_host = space(t1_, H * block);       // [h] = block of rank (h, local_)
  unsigned char* by_local = space(t2_, L * H * block);  // [l][h] = block of rank (h, l)
  across_hosts().allgather(call.send, by_host, n, call.type);
  in_host().allgather(by_host, by_local, H * n, call.type);
  auto* recv = static_cast<unsigned char*>(call.recv);
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h) std::memcpy(recv + (h * L + l) * block, by_local + (l * H + h) * block, block);
}

void HierarchicalCommunicator::do_reduce_scatter(const CollectiveCall& call) {
  const std::size_t n = call.count;
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  const std::size_t in_es = dtype_size(call.type), es = dtype_size(acc);
  const ReduceOp op = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;
  const std::size_t H = static_cast<std::size_t>(hosts_), L = static_cast<std::size_t>(per_host_);
  // Reorder (and widen) the send blocks from rank order [h][l] to [l][h]: local rank l then reduces, in
  // one block of H * n, what its peers on the other hosts need from this host.
  unsigned char* by_local = space(t1_, L * H * n * es);
  const auto* send = static_cast<const unsigned char*>(call.send);
  for (std::size_t l = 0; l < L; ++l) {
    for (std::size_t h = 0; h < H; ++h) {
      const unsigned char* from = send + (h * L + l) * n * in_es;
      unsigned char* to = by_local + (l * H + h) * n * es;
      if (acc != call.type) widen_to_float(from, reinterpret_cast<float*>(to), n, call.type);
      else std::memcpy(to, from, n * es);
    }
  }
  unsigned char* host_part = space(t2_, H * n * es);  // [h] = this host's sum of block (h, local_)
  in_host().reduce_scatter(by_local, host_part, H * n, acc, op);
  unsigned char* mine = host_part + static_cast<std::size_t>(host_) * n * es;
  across_hosts().reduce_scatter(host_part, mine, n, acc, op);  // in place
  finish_reduction(mine, n, acc, call.op, size_);
  if (acc != call.type) narrow_from_float(reinterpret_cast<const float*>(mine), call.recv, n, call.type);
  else std::memcpy(call.recv, mine, n * es);
}

namespace {

bool hierarchical_fits(const Topology& t, bool automatic, std::string* why) {
  if (automatic && t.hosts == 1) {
    *why = "the ranks are on one host";
    return false;
  }
  if (!t.uniform_blocks(why)) return false;
  if (automatic && t.size == t.hosts) {
    *why = "one rank per host, nothing to share inside a host";
    return false;
  }
  return true;
}

std::unique_ptr<Communicator> make_hierarchical(const CommOptions& options, const Topology& t, std::string* why) {
  return HierarchicalCommunicator::create(options, t, why);
}

}  // namespace

const BackendRow& hierarchical_backend() {
  static const BackendRow row{{"hierarchical", Buffers::kHost,
                               "shared memory inside each host, MPI between hosts (same number of ranks on "
                               "every host)",
                               with_copy_probe_statistics({"staging_cached", "staging_streaming", "direct",
                                                           "evicted", "single", "single_permitted"})},
                              hierarchical_fits, make_hierarchical};
  return row;
}

}  // namespace mirror::coll::detail
