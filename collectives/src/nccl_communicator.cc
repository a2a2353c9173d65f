// nccl_communicator.cc — NcclCommunicator: NCCL collectives on the communicator's own non-blocking CUDA
// stream, which first waits (an event) for the work already queued on the legacy default stream, where
// the trainer computes: a collective reads finished inputs while later kernels (the rest of backward) run
// beside it, and callers read results only after a wait (blocking calls wait before they return).
// Validation, numbering, the timeout check and the failure latch come from CommunicatorBase, as for
// every backend. With CommOptions::check_consistency the ranks compare each call's fingerprint on the host
// before it is queued (a ring exchange over MPI, CheckedTransport). Waits poll the stream (or the op's
// event), ncclCommGetAsyncError and the failure notices of the other ranks (MpiNotices) against the
// timeout; on an NCCL error, a timeout, a mismatch or another rank's notice the NCCL communicator is
// aborted, this rank announces its state and listens briefly, and the error raised names the collective
// and the ranks that did not arrive (explain_collective_failure), or the mismatch.
#include "nccl_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "call.h"
#include "checked_transport.h"
#include "communicator_base.h"
#include "failure_notices.h"
#include "host_names.h"
#include "mirror/coll/device.h"
#include "mirror/coll/runtime.h"
#include "mpi_check.h"
#include "mpi_transport.h"
#include "nccl_check.h"
#include "nccl_id_internal.h"

namespace mirror::coll::detail {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t to_nccl(DataType t) {
  switch (t) {
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
  }
  MIRROR_THROW(kInvalidArgument, "nccl backend: unsupported data type value " << static_cast<int>(t));
}

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAvg: return ncclAvg;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProd: return ncclProd;
  }
  MIRROR_THROW(kInvalidArgument, "nccl backend: unsupported reduction value " << static_cast<int>(op));
}

// What the communicator and its outstanding Works share: the NCCL handle, whether it was aborted, and
// the communicator's failure latch.
struct NcclState {
  std::mutex mu;
  ncclComm_t comm = nullptr;
  int device = 0;
  bool aborted = false;
  std::shared_ptr<FailureLatch> latch;
  // The failure-notice channel (shared with outstanding Works; used by one thread at a time).
  std::shared_ptr<MpiNotices> notices;
  std::mutex notices_mu;
  std::chrono::milliseconds timeout{0};
  int rank = 0;
  int size = 1;

  bool notices_pending() {
    std::lock_guard lk(notices_mu);
    return notices && notices->pending();
  }

  // Aborts the NCCL communicator (once) and raises `e`, explained by what the other ranks say when it
  // happened during `call`; the latch keeps the first failure.
  [[noreturn]] void fail(const Error& e, const CollectiveCall* call = nullptr) {
    {
      std::lock_guard lk(mu);
      if (!aborted) {
        aborted = true;
        if (comm) ncclCommAbort(comm);
        comm = nullptr;
      }
    }
    if (call && notices) {
      std::lock_guard lk(notices_mu);
      Error explained = explain_collective_failure(*notices, *call, e, timeout, size);
      latch->record(explained);
      throw explained;
    }
    latch->record(e);
    throw e;
  }
  [[noreturn]] void fail(ErrorKind kind, const std::string& message, const char* file, int line,
                         const CollectiveCall* call = nullptr) {
    fail(Error(kind, message, file, line), call);
  }
};

// Polls `query` (cudaEventQuery or cudaStreamQuery), NCCL's async error and the other ranks' failure
// notices until done or the timeout.
template <typename Query>
void wait_for(NcclState& st, Query query, const std::string& what, std::chrono::milliseconds timeout,
              const CollectiveCall& call) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  for (long polls = 0;; ++polls) {
    const cudaError_t q = query();
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) {
      (void)cudaGetLastError();
      st.fail(ErrorKind::kCuda, what + ": CUDA reported " + cudaGetErrorString(q), __FILE__, __LINE__, &call);
    }
    ncclResult_t async = ncclSuccess;
    {
      std::lock_guard lk(st.mu);
      if (st.comm) ncclCommGetAsyncError(st.comm, &async);
    }
    if (async != ncclSuccess && async != ncclInProgress) {
      st.fail(ErrorKind::kNccl, what + ": NCCL reported " + ncclGetErrorString(async), __FILE__, __LINE__, &call);
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      st.fail(ErrorKind::kTimeout,
              what + " timed out after " + std::to_string(timeout.count()) +
                  " ms on rank " + std::to_string(st.rank) + " (host " + this_host_name() +
                  "); the NCCL communicator was aborted",
              __FILE__, __LINE__, &call);
    }
    if (polls < 64) continue;
    if (polls % 16 == 0 && st.notices_pending()) {
      st.fail(ErrorKind::kRemote, what + " stopped: another rank reported a failure", __FILE__, __LINE__, &call);
    }
    if (now - start < std::chrono::milliseconds(2)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

class NcclWork final : public Work::Impl {
 public:
  NcclWork(std::shared_ptr<NcclState> st, cudaEvent_t ev, std::string what, std::chrono::milliseconds timeout,
           const CollectiveCall& call)
      : st_(std::move(st)), ev_(ev), what_(std::move(what)), timeout_(timeout), call_(call) {}
  ~NcclWork() override {
    if (ev_) cudaEventDestroy(ev_);
  }
  void wait() override {
    if (done_) return;
    wait_for(*st_, [&] { return cudaEventQuery(ev_); }, what_, timeout_, call_);
    done_ = true;
  }
  bool done() override {
    if (!done_ && cudaEventQuery(ev_) == cudaSuccess) done_ = true;
    return done_;
  }

 private:
  std::shared_ptr<NcclState> st_;
  cudaEvent_t ev_ = nullptr;
  std::string what_;
  std::chrono::milliseconds timeout_;
  CollectiveCall call_;
  std::atomic<bool> done_{false};
};

class NcclCommunicator final : public CommunicatorBase {
 public:
  NcclCommunicator(const CommOptions& options, int rank, int size);
  ~NcclCommunicator() override;

  SharedBuffer allocate_shared(std::size_t bytes) override {
    MIRROR_THROW(kInvalidArgument, "allocate_shared(" << bytes << " bytes): the nccl backend works on device "
                                  "memory (cudaMalloc); shared host buffers are for the host backend");
  }

 private:
  Work dispatch(const CollectiveCall& call, bool async) override;
  CollectiveCall barrier_call() const override {
    return {CallKind::kBarrier, barrier_buf_, barrier_buf_, 1, DataType::kInt32, ReduceOp::kSum, 0, 0};
  }
  // The consistency check, on the host before the call is queued: a fingerprint-only ring exchange.
  void check_agreement(const CollectiveCall& call);
  void launch(const CollectiveCall& call);

  CommOptions options_;
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  std::shared_ptr<NcclState> state_ = std::make_shared<NcclState>();
  std::unique_ptr<MpiTransport> check_transport_;  // the consistency check's channel (null when off)
  std::unique_ptr<CheckedTransport> checked_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t inputs_ready_ = nullptr;  // recorded on the legacy default stream before every launch
  void* barrier_buf_ = nullptr;
};

int world_rank() {
  int r = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &r));
  return r;
}
int world_size() {
  int n = 0;
  MIRROR_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &n));
  return n;
}

// Collective over `comm`: the most ranks of one host that use the same CUDA device (1 when every rank has
// its own). NCCL before 2.30 refuses such a communicator ("Duplicate GPU detected"); the count lets the
// error say why.
int ranks_per_device(MPI_Comm comm, int device) {
  MPI_Comm host = MPI_COMM_NULL;
  MIRROR_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host));
  int host_size = 0;
  MPI_Comm_size(host, &host_size);
  std::vector<int> devices(static_cast<std::size_t>(host_size));
  const int rc = MPI_Allgather(&device, 1, MPI_INT, devices.data(), 1, MPI_INT, host);
  MPI_Comm_free(&host);
  MIRROR_CHECK_MPI(rc);
  int most = 0;
  for (int d : devices) most = std::max(most, static_cast<int>(std::count(devices.begin(), devices.end(), d)));
  int agreed = 0;
  MIRROR_CHECK_MPI(MPI_Allreduce(&most, &agreed, 1, MPI_INT, MPI_MAX, comm));
  return agreed;
}

NcclCommunicator::NcclCommunicator(const CommOptions& options, int rank, int size)
    : CommunicatorBase(nccl_backend().info, rank, size, options.timeout), options_(options) {
  MIRROR_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm_));
  MIRROR_CHECK_MPI(MPI_Comm_set_errhandler(mpi_comm_, MPI_ERRORS_RETURN));

  // Every rank must see a GPU; agree on it first, so all ranks fail together instead of some hanging.
  const int devices = cuda_device_count();
  int device = options_.device >= 0 ? options_.device : (devices > 0 ? MpiRuntime::local_rank() % devices : -1);
  int local_ok = (devices > 0 && device >= 0 && device < devices) ? 1 : 0, all_ok = 0;
  MIRROR_CHECK_MPI(MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, mpi_comm_));
  if (!all_ok) {
    MPI_Comm_free(&mpi_comm_);
    if (!local_ok && devices == 0) {
      MIRROR_THROW(kCuda, "nccl backend: rank " << rank_ << " sees no CUDA GPU (no device or no driver); "
                                                << "use the host backend (--backend host) on this machine");
    }
    if (!local_ok) {
      MIRROR_THROW(kInvalidArgument, "nccl backend: CommOptions.device " << device << " is out of range; rank "
                                                                         << rank_ << " sees " << devices << " GPU(s)");
    }
    MIRROR_THROW(kRemote, "nccl backend: another rank has no usable GPU; see its error");
  }
  state_->device = device;
  state_->timeout = options_.timeout;
  state_->rank = rank_;
  state_->size = size_;
  state_->latch = latch();
  state_->notices = std::make_shared<MpiNotices>(MPI_COMM_WORLD);  // collective: every rank got past the GPU check
  if (options_.check_consistency && size_ > 1) {
    check_transport_ = std::make_unique<MpiTransport>(MPI_COMM_WORLD);
    check_transport_->set_interrupt([st = state_] { return st->notices_pending(); });
    check_transport_->set_host_names(state_->notices->host_names());
    checked_ = std::make_unique<CheckedTransport>(*check_transport_);
  }
  const int sharing = ranks_per_device(mpi_comm_, device);
  MIRROR_CHECK_CUDA(cudaSetDevice(device));
  const std::vector<std::uint8_t> id_bytes = broadcast_nccl_unique_id(mpi_comm_, 0);
  ncclUniqueId id;
  std::memcpy(&id, id_bytes.data(), sizeof(id));
  // A non-blocking stream, so that kernels queued on the legacy default stream after a collective need not
  // wait for it (a blocking stream would order them); dispatch() orders the collective after its inputs.
  MIRROR_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  MIRROR_CHECK_CUDA(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming));
  MIRROR_CHECK_CUDA(cudaMalloc(&barrier_buf_, sizeof(int)));
  MIRROR_CHECK_CUDA(cudaMemset(barrier_buf_, 0, sizeof(int)));
  const ncclResult_t init = ncclCommInitRank(&state_->comm, size_, id, rank_);
  if (init != ncclSuccess) {
    // The destructor does not run for a constructor that throws: release what was made.
    cudaFree(barrier_buf_);
    cudaEventDestroy(inputs_ready_);
    cudaStreamDestroy(stream_);
    MPI_Comm_free(&mpi_comm_);
    int version = 0;
    ncclGetVersion(&version);
    std::string why;
    if (sharing > 1)
      why = "; " + std::to_string(sharing) + " ranks on one host use CUDA device " + std::to_string(device) +
            ", and NCCL before 2.30 needs a GPU per rank (2.30 and later: NCCL_MULTI_RANK_GPU_ENABLE=1, "
            "experimental). Run at most one rank per GPU, or train on the CPU (--device cpu)";
    MIRROR_THROW(kNccl, "nccl backend: ncclCommInitRank failed on rank "
                            << rank_ << " (device " << device << ", NCCL " << version << "): "
                            << ncclGetErrorString(init) << why
                            << " (HINT: rerun with NCCL_DEBUG=WARN for NCCL's own diagnosis)");
  }
}

NcclCommunicator::~NcclCommunicator() {
  // Never throws: errors on the way out are ignored.
  {
    std::lock_guard lk(state_->mu);
    if (state_->comm) {
      cudaSetDevice(state_->device);
      if (cudaStreamSynchronize(stream_) == cudaSuccess) {
        ncclCommDestroy(state_->comm);
      } else {
        ncclCommAbort(state_->comm);
      }
      state_->comm = nullptr;
      state_->aborted = true;
    } else if (state_->aborted && state_->notices) {
      state_->notices->keep_comm_on_destroy();  // a failure: abandoned notices stay out of later communicators
      if (check_transport_) check_transport_->keep_comm_on_destroy();
    }
  }
  if (barrier_buf_) cudaFree(barrier_buf_);
  if (inputs_ready_) cudaEventDestroy(inputs_ready_);
  if (stream_) cudaStreamDestroy(stream_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (mpi_comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&mpi_comm_);
}

void NcclCommunicator::launch(const CollectiveCall& c) {
  ncclComm_t comm = state_->comm;
  const ncclDataType_t t = to_nccl(c.type);
  switch (c.kind) {
    case CallKind::kAllreduce:
      MIRROR_CHECK_NCCL(ncclAllReduce(c.send, c.recv, c.count, t, to_nccl(c.op), comm, stream_));
      return;
    case CallKind::kBroadcast:
      MIRROR_CHECK_NCCL(ncclBroadcast(c.send, c.recv, c.count, t, c.root, comm, stream_));
      return;
    case CallKind::kAllgather:
      MIRROR_CHECK_NCCL(ncclAllGather(c.send, c.recv, c.count, t, comm, stream_));
      return;
    case CallKind::kReduceScatter:
      MIRROR_CHECK_NCCL(ncclReduceScatter(c.send, c.recv, c.count, t, to_nccl(c.op), comm, stream_));
      return;
    case CallKind::kBarrier:
      MIRROR_CHECK_NCCL(ncclAllReduce(c.send, c.recv, 1, ncclInt32, ncclSum, comm, stream_));
      return;
  }
}

void NcclCommunicator::check_agreement(const CollectiveCall& call) {
  OpContext ctx;
  ctx.seq = call.seq;
  ctx.timeout = options_.timeout;
  ctx.deadline = Clock::now() + options_.timeout;
  ctx.describe = [&call, n = size_] { return call.describe(n) + " [nccl, consistency check]"; };
  try {
    checked_->begin(fingerprint(call, rank_));
    checked_->sendrecv((rank_ + 1) % size_, nullptr, 0, (rank_ + size_ - 1) % size_, nullptr, 0, ctx);
  } catch (const Error& e) {
    state_->fail(e, &call);
  }
}

Work NcclCommunicator::dispatch(const CollectiveCall& call, bool async) {
  const std::string what = call.describe(size_) + " [nccl]";
  latch()->check(what);
  if (checked_) check_agreement(call);
  MIRROR_CHECK_CUDA(cudaSetDevice(state_->device));
  if (call.count > 0) {
    try {
      // The inputs are written by work queued on the legacy default stream (the trainer's kernels, its
      // copies): the collective starts after it.
      MIRROR_CHECK_CUDA(cudaEventRecord(inputs_ready_, cudaStreamLegacy));
      MIRROR_CHECK_CUDA(cudaStreamWaitEvent(stream_, inputs_ready_, 0));
      launch(call);
    } catch (const Error& e) {
      state_->fail(e.kind(), what + ": " + e.message(), __FILE__, __LINE__, &call);
    }
  }
  if (!async) {
    wait_for(*state_, [&] { return cudaStreamQuery(stream_); }, what, options_.timeout, call);
    return Work();
  }
  cudaEvent_t ev = nullptr;
  MIRROR_CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  const cudaError_t rc = cudaEventRecord(ev, stream_);
  if (rc != cudaSuccess) {
    cudaEventDestroy(ev);
    MIRROR_CHECK_CUDA(rc);
  }
  return Work(std::make_shared<NcclWork>(state_, ev, what, options_.timeout, call));
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& options) {
  return std::make_unique<NcclCommunicator>(options, world_rank(), world_size());
}

}  // namespace mirror::coll::detail
