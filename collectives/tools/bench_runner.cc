// bench_runner.cc — one row of mirror-bench: Mirror out-of-place, in-place, and plain MPI, timed and checked.
#include "bench_runner.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench_data.h"
#include "mirror/coll/device.h"
#include "mirror/error.h"

namespace mirror::bench {

using coll::DataType;
using coll::ReduceOp;

double bus_factor(BenchOp op, int n) {
  switch (op) {
    case BenchOp::kAllreduce: return 2.0 * (n - 1) / n;
    case BenchOp::kAllgather:
    case BenchOp::kReduceScatter: return static_cast<double>(n - 1) / n;
    case BenchOp::kBroadcast: return 1.0;
  }
  return 1.0;
}

int iterations_for(std::size_t bytes, int iters) {
  constexpr std::size_t kBudget = std::size_t{256} << 20;  // bytes per timed sweep of one size
  if (bytes <= (std::size_t{8} << 20)) return iters;
  return static_cast<int>(std::max<std::size_t>(2, std::min<std::size_t>(iters, kBudget / bytes)));
}

// Host buffers (ordinary memory, or Communicator::allocate_shared with --shared-buffers), mirrored on the
// device for the nccl backend. They hold the largest layout so far.
struct BenchRunner::Buffers {
  std::vector<unsigned char> send_vec, recv_vec;
  coll::SharedBuffer send_shared, recv_shared;
  coll::Communicator* shared_from = nullptr;  // set: host buffers come from allocate_shared
  std::size_t send_bytes = 0, recv_bytes = 0;
  std::unique_ptr<coll::DeviceBuffer> dsend, drecv;
  bool device = false;
  unsigned char* send() { return shared_from ? send_shared.as<unsigned char>() : send_vec.data(); }
  unsigned char* recv() { return shared_from ? recv_shared.as<unsigned char>() : recv_vec.data(); }
  void* send_ptr() { return device ? dsend->data() : send(); }
  void* recv_ptr() { return device ? drecv->data() : recv(); }
  // Collective with --shared-buffers (every rank runs the same rows).
  void resize(std::size_t new_send, std::size_t new_recv) {
    if (shared_from) {
      auto grow = [&](coll::SharedBuffer& buffer, std::size_t bytes) {
        if (buffer.bytes() >= bytes) return;
        buffer = {};  // the old one goes first: its slot can be reused
        buffer = shared_from->allocate_shared(bytes);
      };
      grow(send_shared, new_send);
      grow(recv_shared, new_recv);
    } else {
      send_vec.resize(new_send);
      recv_vec.resize(new_recv);
    }
    send_bytes = new_send, recv_bytes = new_recv;
    if (device) {
      if (!dsend || dsend->bytes() < new_send) dsend = std::make_unique<coll::DeviceBuffer>(new_send);
      if (!drecv || drecv->bytes() < new_recv) drecv = std::make_unique<coll::DeviceBuffer>(new_recv);
    }
  }
  void upload() {
    if (!device) return;
    dsend->upload(send(), send_bytes);
    drecv->upload(recv(), recv_bytes);
  }
  void download_recv() {
    if (device) drecv->download(recv(), recv_bytes);
  }
};

namespace {

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;  // MPI has no float16/bfloat16
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return MPI_SUM;  // MPI has no average: the sum moves the same bytes
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProd: return MPI_PROD;
  }
  return MPI_SUM;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Mean time of one iteration on the slowest rank.
double slowest(double local_us) {
  double worst = local_us;
  MPI_Allreduce(&local_us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace

BenchRunner::BenchRunner(const BenchOptions& options, coll::Communicator& comm)
    : o_(options), comm_(comm), buf_(std::make_unique<Buffers>()) {
  buf_->device = comm.backend().buffers == coll::Buffers::kDevice;
  if (options.shared_buffers) buf_->shared_from = &comm;
}
BenchRunner::~BenchRunner() = default;

// Elements per rank-call: allreduce/broadcast: the whole buffer; allgather: sent by each rank;
// reduce_scatter: received by each rank.
void BenchRunner::call(std::size_t count, bool in_place) {
  const int r = comm_.rank();
  const std::size_t es = coll::dtype_size(o_.type);
  auto* send = static_cast<unsigned char*>(buf_->send_ptr());
  auto* recv = static_cast<unsigned char*>(buf_->recv_ptr());
  switch (o_.op) {
    case BenchOp::kAllreduce:
      comm_.allreduce(in_place ? recv : send, recv, count, o_.type, o_.redop);
      return;
    case BenchOp::kBroadcast: comm_.broadcast(recv, count, o_.type, o_.root); return;
    case BenchOp::kAllgather:
      comm_.allgather(in_place ? recv + static_cast<std::size_t>(r) * count * es : send, recv, count, o_.type);
      return;
    case BenchOp::kReduceScatter:
      // In place: the send layout lives in the recv buffer, rank r's block is the result.
      if (in_place) {
        comm_.reduce_scatter(recv, recv + static_cast<std::size_t>(r) * count * es, count, o_.type, o_.redop);
      } else {
        comm_.reduce_scatter(send, recv, count, o_.type, o_.redop);
      }
      return;
  }
}

void BenchRunner::fill_inputs(std::size_t count, bool in_place) {
  const int r = comm_.rank(), n = comm_.size();
  void* in = in_place ? buf_->recv() : buf_->send();
  std::fill(buf_->recv(), buf_->recv() + buf_->recv_bytes, 0);
  switch (o_.op) {
    case BenchOp::kAllreduce:
      for (std::size_t i = 0; i < count; ++i) store_value(in, i, o_.type, input_value(o_.redop, r, i, n));
      break;
    case BenchOp::kBroadcast:
      // Non-roots start from a value no correct result has.
      for (std::size_t i = 0; i < count; ++i)
        store_value(buf_->recv(), i, o_.type, r == o_.root ? input_value(ReduceOp::kSum, r, i, n) : 99.0);
      break;
    case BenchOp::kAllgather: {
      const std::size_t off = in_place ? static_cast<std::size_t>(r) * count : 0;
      for (std::size_t i = 0; i < count; ++i) store_value(in, off + i, o_.type, input_value(ReduceOp::kSum, r, i, n));
      break;
    }
    case BenchOp::kReduceScatter:
      for (std::size_t i = 0; i < count * static_cast<std::size_t>(n); ++i)
        store_value(in, i, o_.type, input_value(o_.redop, r, i, n));
      break;
  }
  buf_->upload();
}

long long BenchRunner::count_wrong(std::size_t count, bool in_place) {
  const int r = comm_.rank(), n = comm_.size();
  buf_->download_recv();
  const void* out = buf_->recv();
  long long wrong = 0;
  auto cmp = [&](std::size_t at, double expected) { wrong += load_value(out, at, o_.type) != expected; };
  switch (o_.op) {
    case BenchOp::kAllreduce:
      for (std::size_t i = 0; i < count; ++i) cmp(i, expected_value(o_.redop, i, n));
      break;
    case BenchOp::kBroadcast:
      for (std::size_t i = 0; i < count; ++i) cmp(i, input_value(ReduceOp::kSum, o_.root, i, n));
      break;
    case BenchOp::kAllgather:
      for (std::size_t j = 0; j < count * static_cast<std::size_t>(n); ++j)
        cmp(j, input_value(ReduceOp::kSum, static_cast<int>(j / count), j % count, n));
      break;
    case BenchOp::kReduceScatter: {
      const std::size_t base = static_cast<std::size_t>(r) * count, at = in_place ? base : 0;
      for (std::size_t i = 0; i < count; ++i) cmp(at + i, expected_value(o_.redop, base + i, n));
      break;
    }
  }
  return wrong;
}

long long BenchRunner::check(std::size_t count, bool in_place) {
  fill_inputs(count, in_place);
  call(count, in_place);
  long long wrong = count_wrong(count, in_place), total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

Timing BenchRunner::time_mirror(std::size_t count, bool in_place, int iters) {
  Timing t;
  t.ran = true;
  t.wrong = o_.check ? check(count, in_place) : -1;
  if (!o_.check) fill_inputs(count, in_place);
  for (int i = 0; i < std::min(o_.warmup, iters); ++i) call(count, in_place);
  comm_.barrier();
  const double start = now_us();
  for (int i = 0; i < iters; ++i) call(count, in_place);
  t.time_us = slowest((now_us() - start) / iters);
  return t;
}

Timing BenchRunner::time_mpi(std::size_t count, int iters) {
  Timing t;
  const MPI_Datatype dt = mpi_type(o_.type);
  if (dt == MPI_DATATYPE_NULL && o_.op != BenchOp::kBroadcast && o_.op != BenchOp::kAllgather) return t;
  // MPI runs on host buffers (the same host arrays; their content does not matter for timing).
  void* send = buf_->send();
  void* recv = buf_->recv();
  const int c = static_cast<int>(count);
  const int es = static_cast<int>(coll::dtype_size(o_.type));
  auto once = [&] {
    switch (o_.op) {
      case BenchOp::kAllreduce: MPI_Allreduce(send, recv, c, dt, mpi_op(o_.redop), MPI_COMM_WORLD); break;
      case BenchOp::kBroadcast: MPI_Bcast(recv, c * es, MPI_BYTE, o_.root, MPI_COMM_WORLD); break;
      case BenchOp::kAllgather: MPI_Allgather(send, c * es, MPI_BYTE, recv, c * es, MPI_BYTE, MPI_COMM_WORLD); break;
      case BenchOp::kReduceScatter:
        MPI_Reduce_scatter_block(send, recv, c, dt, mpi_op(o_.redop), MPI_COMM_WORLD);
        break;
    }
  };
  if (count > static_cast<std::size_t>(INT32_MAX) / 8) return t;  // beyond MPI's int counts
  for (int i = 0; i < std::min(o_.warmup, iters); ++i) once();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = now_us();
  for (int i = 0; i < iters; ++i) once();
  t.time_us = slowest((now_us() - start) / iters);
  t.ran = true;
  return t;
}

BenchRow BenchRunner::run(std::size_t bytes) {
  const int n = comm_.size();
  const std::size_t es = coll::dtype_size(o_.type);
  const bool per_rank = o_.op == BenchOp::kAllgather || o_.op == BenchOp::kReduceScatter;
  const std::size_t count = per_rank ? bytes / es / static_cast<std::size_t>(n) : bytes / es;  // per call
  BenchRow row;
  row.count = per_rank ? count * static_cast<std::size_t>(n) : count;
  row.bytes = row.count * es;
  row.iters = iterations_for(row.bytes, o_.iters);
  const std::size_t big = row.bytes, small = per_rank ? count * es : big;
  if (o_.op == BenchOp::kAllgather) buf_->resize(small, big);
  else if (o_.op == BenchOp::kReduceScatter) buf_->resize(big, big);  // in place needs the send layout in recv
  else buf_->resize(big, big);

  if (o_.op != BenchOp::kBroadcast) row.out_of_place = time_mirror(count, false, row.iters);
  row.in_place = time_mirror(count, true, row.iters);
  row.mpi = time_mpi(count, row.iters);
  const double f = bus_factor(o_.op, n);
  for (Timing* t : {&row.out_of_place, &row.in_place, &row.mpi}) {
    if (!t->ran || t->time_us <= 0) continue;
    t->algbw = static_cast<double>(row.bytes) / (t->time_us * 1e-6) / 1e9;
    t->busbw = t->algbw * f;
  }
  const Timing& mine = row.out_of_place.ran ? row.out_of_place : row.in_place;
  if (row.mpi.ran && row.mpi.busbw > 0) row.ratio = mine.busbw / row.mpi.busbw;
  return row;
}

}  // namespace mirror::bench
