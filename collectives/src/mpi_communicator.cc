// mpi_communicator.cc — MpiCommunicator: the mpi backend's collectives over the host algorithms, the
// consistency check wired in, failures explained through MpiNotices; its table row.
#include "mpi_communicator.h"

#include <cstring>

#include "host_16bit.h"
#include "mpi_check.h"
#include "mpi_requests.h"
#include "reduce.h"

namespace mirror::coll::detail {

namespace {
bool mpi_thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MIRROR_CHECK_MPI(MPI_Query_thread(&provided));
  return provided == MPI_THREAD_MULTIPLE;
}
int group_rank(MPI_Comm group) {
  int r = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(group, &r));
  return r;
}
int group_size(MPI_Comm group) {
  int n = 0;
  MIRROR_CHECK_MPI(MPI_Comm_size(group, &n));
  return n;
}
}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm group, const CommOptions& options)
    // The progress thread calls MPI concurrently with the user's thread: only with MPI_THREAD_MULTIPLE.
    : QueuedCommunicator(mpi_backend().info, group_rank(group), group_size(group), options.timeout,
                         options.progress_thread && mpi_thread_multiple()),
      transport_(std::make_unique<MpiTransport>(group)),
      options_(options) {
  algo_transport_ = transport_.get();
  if (options_.check_consistency && size_ > 1) {
    checked_ = std::make_unique<CheckedTransport>(*transport_);
    algo_transport_ = checked_.get();
  }
  notices_ = std::make_unique<MpiNotices>(group);  // collective: every rank builds its communicator together
  transport_->set_interrupt([n = notices_.get()] { return n->pending(); });
  transport_->set_host_names(notices_->host_names());
  transport_->set_peer_done([n = notices_.get()](int peer) { return n->heard_from(peer); });
}

void MpiCommunicator::serve_as_part(std::function<bool()> interrupt, std::function<bool(int)> peer_done) {
  explained_by_owner_ = true;
  transport_->set_interrupt([n = notices_.get(), check = std::move(interrupt)] { return n->pending() || check(); });
  transport_->set_peer_done(std::move(peer_done));
}

MpiCommunicator::~MpiCommunicator() {
  stop_queue();  // the running op finishes first
  if (failed()) {  // abandoned messages must not reach a later communicator (see keep_comm_on_destroy)
    transport_->keep_comm_on_destroy();
    notices_->keep_comm_on_destroy();
  }
  if (transport_->unfinished() > 0) {  // MPI may still write into these (mpi_requests.h)
    keep_until_exit(std::move(workspace_));
    keep_until_exit(std::move(checked_));
  }
}

void MpiCommunicator::run(const CollectiveCall& call, const OpContext& ctx) {
  if (checked_) checked_->begin(fingerprint(call, rank_));
  switch (call.kind) {
    case CallKind::kAllreduce: do_allreduce(call, ctx); break;
    case CallKind::kBroadcast:
      // The root of a tree broadcast receives nothing, so it could not see a peer that disagrees (two
      // ranks that both think they are the root would both just send). With the check on, a broadcast
      // starts with a fingerprint-only exchange around the ring, which does not depend on the root.
      if (checked_ && call.count > 0) {
        checked_->sendrecv((rank_ + 1) % size_, nullptr, 0, (rank_ + size_ - 1) % size_, nullptr, 0, ctx);
      }
      detail::broadcast(*algo_transport_, workspace_, call.recv, call.count * dtype_size(call.type), call.root, ctx);
      break;
    case CallKind::kAllgather: do_allgather(call, ctx); break;
    case CallKind::kReduceScatter: do_reduce_scatter(call, ctx); break;
    case CallKind::kBarrier: barrier_dissemination(*algo_transport_, workspace_, ctx); break;
  }
}

Error MpiCommunicator::explain(const CollectiveCall& call, const Error& e) {
  if (!notices_ || size_ == 1 || explained_by_owner_) return e;
  return explain_collective_failure(*notices_, call, e, options_.timeout, size_);
}

void MpiCommunicator::do_allreduce(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t n = call.count;
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  if (acc != call.type && size_ > 1 && n >= static_cast<std::size_t>(size_) && n * 2 > kSmallAllreduceBytes) {
    // 16-bit, large: 16-bit bytes on the wire, float32 sums in rank order, rounded once (host_16bit.h)
    allreduce_16bit(*algo_transport_, workspace_, call.send, call.recv, n, call.type, call.op, ctx);
    return;
  }
  if (acc != call.type) {  // 16-bit, small: reduce in float32, round once
    auto* f = reinterpret_cast<float*>(workspace_.get(1, n * sizeof(float)));
    widen_to_float(call.send, f, n, call.type);
    detail::allreduce(*algo_transport_, workspace_, f, n, acc, call.op, ctx);
    narrow_from_float(f, call.recv, n, call.type);
    return;
  }
  const bool small = n * dtype_size(acc) <= kSmallAllreduceBytes || n < static_cast<std::size_t>(size_);
  if (size_ > 1 && !small) {  // ring: reads send directly, no copy for out-of-place
    allreduce_ring(*algo_transport_, workspace_, call.send, call.recv, n, acc, call.op, ctx);
    return;
  }
  if (call.send != call.recv) std::memcpy(call.recv, call.send, n * dtype_size(call.type));
  detail::allreduce(*algo_transport_, workspace_, call.recv, n, acc, call.op, ctx);
}

void MpiCommunicator::do_allgather(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t es = dtype_size(call.type), n = call.count;
  if (n == 0) return;
  auto* mine = static_cast<unsigned char*>(call.recv) + static_cast<std::size_t>(rank_) * n * es;
  if (call.send != mine) std::memcpy(mine, call.send, n * es);
  if (size_ == 1) return;
  ChunkLayout chunks;
  for (int i = 0; i < size_; ++i) {
    chunks.offset.push_back(static_cast<std::size_t>(i) * n);
    chunks.count.push_back(n);
  }
  chunks.max_count = n;
  allgather_ring(*algo_transport_, workspace_, call.recv, chunks, es, ctx);
}

void MpiCommunicator::do_reduce_scatter(const CollectiveCall& call, const OpContext& ctx) {
  const std::size_t n = call.count, total = n * static_cast<std::size_t>(size_);
  if (n == 0) return;
  const DataType acc = accumulation_type(call.type);
  const std::size_t acc_size = dtype_size(acc);
  ChunkLayout chunks;
  for (int i = 0; i < size_; ++i) {
    chunks.offset.push_back(static_cast<std::size_t>(i) * n);
    chunks.count.push_back(n);
  }
  chunks.max_count = n;
  if (acc != call.type && size_ > 1) {  // 16-bit: 16-bit bytes on the wire, float32 sums (host_16bit.h)
    reduce_scatter_16bit(*algo_transport_, workspace_, call.send, call.recv, chunks, call.type, call.op, ctx);
    return;
  }
  // Work on a copy: the send buffer is const, and in place only this rank's block may change.
  unsigned char* work = workspace_.get(1, total * acc_size);
  if (acc != call.type) {
    widen_to_float(call.send, reinterpret_cast<float*>(work), total, call.type);
  } else {
    std::memcpy(work, call.send, total * acc_size);
  }
  if (size_ > 1) reduce_scatter_ring(*algo_transport_, workspace_, work, work, chunks, acc, call.op, ctx);
  unsigned char* mine = work + static_cast<std::size_t>(rank_) * n * acc_size;
  finish_reduction(mine, n, acc, call.op, size_);
  if (acc != call.type) {
    narrow_from_float(reinterpret_cast<const float*>(mine), call.recv, n, call.type);
  } else {
    std::memcpy(call.recv, mine, n * acc_size);
  }
}

namespace {
std::unique_ptr<Communicator> make_mpi(const CommOptions& options, const Topology& topology, std::string*) {
  return std::make_unique<MpiCommunicator>(topology.comm, options);
}
bool mpi_fits(const Topology&, bool, std::string*) { return true; }
}  // namespace

const BackendRow& mpi_backend() {
  static const BackendRow row{{"mpi", Buffers::kHost, "MPI point-to-point between every pair of ranks, any placement", {}},
                              mpi_fits, make_mpi};
  return row;
}

}  // namespace mirror::coll::detail
