// mirror/coll/communicator.h — the one interface through which Mirror communicates between ranks.
//
// A Communicator spans the ranks of the MPI job (one per process). The backend is a row of the backend
// table (mirror/coll/backend.h), chosen at run time:
//   host buffers — reductions on the CPU (16-bit floats accumulate in float32), over shared memory (shm,
//     one host), MPI point-to-point (mpi), or shared memory inside each host and MPI between hosts
//     (hierarchical);
//   device buffers — nccl: CUDA memory; NCCL communicator bootstrapped over MPI.
// All calls are collective: every rank calls them in the same order with the same count, dtype and op.
// Buffers: for every call, send == recv means in-place. A null buffer with count > 0, an unsupported
// dtype/op pair or a root out of range throws mirror::Error(kInvalidArgument) on the calling rank.
// A count of 0 is valid and moves nothing.
//
// Order and asynchrony: calls run in the order they were issued on this rank, async ones included. The
// host backend runs them on one progress thread per communicator (a blocking call runs inline when nothing
// is outstanding); with less than MPI_THREAD_MULTIPLE from MPI there is no progress thread and async calls
// complete before they return. The nccl backend enqueues on its CUDA stream and returns.
//
// Timeouts: every wait (a blocking call, Work::wait) gives up after CommOptions.timeout and throws
// mirror::Error(kTimeout) naming the collective, its sequence number and its size. After any failed
// collective (timeout, MPI/NCCL error) the communicator is unusable: later calls throw, naming the first
// failure (the nccl backend aborts its NCCL communicator before raising). Make a new one to go on.
// A failed call's buffers may be freed once it has thrown: the host backends cancel its transfers and wait
// for those already under way to end (up to clamp(timeout / 4, 100 ms, 2 s)); only a transfer from a peer
// that stalls in the middle of a message can outlast that.
//
// Reductions: float16/bfloat16 accumulate in float32 on the host backend and are rounded once. Integer
// sum/prod wrap around; integer avg is the sum divided by size() truncating toward zero (C++ division).
//
// NCCL stream contract: the nccl backend issues every collective on its own stream, made with
// cudaStreamCreate, i.e. a BLOCKING stream: it is ordered with the legacy default stream (stream 0 without
// --default-stream per-thread). Kernels and cudaMemcpy on the default stream before a call are finished
// before the collective starts; work on the default stream after a blocking call (or after Work::wait())
// sees its result. Work on other non-blocking streams must be synchronised by the caller.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mirror/coll/backend.h"
#include "mirror/coll/types.h"

namespace mirror::coll {

// Handle of an asynchronous collective. wait() blocks until it completes (throws what the collective
// threw, or kTimeout). A default-constructed Work is already complete. Waiting twice is allowed.
class Work {
 public:
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual void wait() = 0;
    virtual bool done() = 0;  // non-blocking test
  };
  Work() = default;
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  void wait() { if (impl_) impl_->wait(); }
  bool done() { return !impl_ || impl_->done(); }

 private:
  std::shared_ptr<Impl> impl_;
};

// Host memory from Communicator::allocate_shared: data() is this rank's part (bytes(), 64-byte aligned,
// zeroed). Copies share the memory; it is released when the last copy (and any collective using it) is
// gone, on each rank independently. May outlive the communicator.
class SharedBuffer {
 public:
  SharedBuffer() = default;
  SharedBuffer(std::shared_ptr<void> memory, std::size_t bytes) : memory_(std::move(memory)), bytes_(bytes) {}
  void* data() const { return memory_.get(); }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const { return static_cast<T*>(memory_.get()); }

 private:
  std::shared_ptr<void> memory_;
  std::size_t bytes_ = 0;
};

// How the shared-memory transport writes the staging buffers that other ranks read during large
// allreduces: kCached — plain stores (the reader takes the lines from the writer's cache: fastest when the
// ranks' cores share a cache); kStreaming — non-temporal stores (the reader takes them from memory: no
// cross-core invalidation, which costs many times more when a hypervisor places the virtual CPUs apart);
// kAuto — each rank measures its own work time with both and keeps the cheaper, re-checking the other
// in 2 of every 64 large allreduces (docs/collectives-shm.md). Results are identical in every mode.
enum class ShmStaging { kAuto, kCached, kStreaming };
const char* to_string(ShmStaging staging);
ShmStaging parse_shm_staging(std::string_view name);  // "auto" | "cached" | "streaming"

// How the shared-memory transport moves ordinary (not allocate_shared) buffers between ranks: kStaged —
// through its staging buffers (each byte copied in by its owner and out by its reader); kSingle — one
// copy, straight between the ranks' own buffers with Linux cross-memory attach (process_vm_readv /
// process_vm_writev); kAuto — single copy for the sizes where it is faster, staged elsewhere:
// for allreduces as a probe timed both paths at the first ordinary allreduce of at least 32 KiB (shared by
// all ranks; CommOptions::shm_copy_probe), for the others by fixed bands (docs/collectives-shm.md). Single copy needs the start-up probe to succeed on every rank (same user,
// ptrace permitted); otherwise every mode stages. The choice is the same on every rank for a call, and
// the results are bit-identical in every mode.
enum class ShmCopy { kAuto, kStaged, kSingle };
const char* to_string(ShmCopy copy);
ShmCopy parse_shm_copy(std::string_view name);  // "auto" | "staged" | "single"

// One probed size of kAuto's copy-path probe (docs/collectives-shm.md, "kAuto's probe"): an in-place
// float32 sum allreduce of `bytes` on ordinary buffers, the slowest rank's best time with each path, and
// the call bytes [band_lo, band_hi) that follow its winner (band_hi 0: no end).
struct ShmCopyProbeFigure {
  std::uint64_t bytes = 0;
  bool in_place = true;  // timed in place (send == recv) or out of place; each shape has its own bands
  double staged_us = 0, single_us = 0;
  std::uint64_t band_lo = 0, band_hi = 0;
  bool single = false;  // the band takes single copy
};

struct CommOptions {
  // The backend: a row of backends() (parse_backend() turns the programs' flags into one), or nullptr:
  // host buffers, the first of shm (every rank on one host), hierarchical (several hosts with the same
  // number of ranks, more than one each) and mpi that fits the ranks.
  const BackendInfo* backend = nullptr;
  // Every blocking wait gives up after this long and throws kTimeout naming the collective.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // nccl: the CUDA device this rank uses; -1 means "the local rank modulo the visible device count".
  int device = -1;
  // host buffers: run async calls on a per-communicator progress thread (over MPI only when MPI provides
  // MPI_THREAD_MULTIPLE). false, or less thread support: async calls run inline and return completed.
  bool progress_thread = true;
  // shm (and the shared-memory part of hierarchical): how staging buffers are written (see ShmStaging).
  ShmStaging shm_staging = ShmStaging::kAuto;
  // shm (and the shared-memory part of hierarchical): staged or single-copy transfers of ordinary
  // buffers (see ShmCopy). All ranks must agree on it.
  ShmCopy shm_copy = ShmCopy::kAuto;
  // shm, ShmCopy::kAuto: choose staged or single copy per size band and call shape (in place or not) from a
  // probe that times both paths in both shapes at the first ordinary allreduce of at least 32 KiB (every
  // rank; docs/collectives-shm.md); false: the
  // fixed bands of shm_communicator.h. The programs' --shm-copy-probe on|off. All ranks must agree on it.
  bool shm_copy_probe = true;
  // Every backend: check that all ranks issue the same collective (op, dtype, count, reduction, root,
  // order) before any data is used; a mismatch fails on every rank with kInvalidArgument naming each
  // rank's call. All ranks must agree on it. The programs' --check-collectives on|off sets it; off only to
  // measure its cost (docs/reliability.md).
  bool check_consistency = true;
  // TEST SEAM, set only by tests and `mirror-bench --fake-hosts K`: treat consecutive blocks of ranks
  // (rank r on host r * K / size) as K hosts instead of asking MPI which ranks share a node, so the
  // multi-host backends can be tested on one machine. 0: the real hosts.
  int hosts_for_testing = 0;
  // TEST SEAM: this rank's start-up probe of cross-memory attach reports it refused (as EPERM would), so
  // the fallback to staged transfers can be tested where the OS permits it. false: the real probe.
  bool shm_copy_refused_for_testing = false;
  // TEST SEAM: when not empty, this rank's copy-path probe takes these figures (bytes, in_place, staged_us,
  // single_us; one per probed size in place, then one per probed size out of place, each in the order 64 KiB,
  // 1 MiB, 4 MiB, 16 MiB) instead of timing; they are shared (maximum over ranks) and decide the bands as
  // measured ones would.
  std::vector<ShmCopyProbeFigure> shm_copy_probe_figures_for_testing;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The row of the backend table this communicator was built from.
  virtual const BackendInfo& backend() const = 0;
  // The counters of backend().statistics, in that order (read while no call is outstanding).
  virtual std::vector<Statistic> statistics() const { return {}; }
  // Why make_communicator, left to choose, passed over the backends before this one (e.g. "not
  // hierarchical: hosts have 2, 1 ranks"); empty when it was asked for by name or nothing was passed over.
  const std::string& selection_note() const { return selection_note_; }

  // recv[i] = op over ranks of send[i], for i < count, on every rank.
  virtual void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual Work allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;

  // buf (count elements) of root is copied to every rank's buf.
  virtual void broadcast(void* buf, std::size_t count, DataType type, int root) = 0;
  virtual Work broadcast_async(void* buf, std::size_t count, DataType type, int root) = 0;

  // recv (size() * count elements) = concatenation of every rank's send (count elements), rank order.
  // In place when send == recv + rank() * count.
  virtual void allgather(const void* send, void* recv, std::size_t count, DataType type) = 0;
  virtual Work allgather_async(const void* send, void* recv, std::size_t count, DataType type) = 0;

  // send has size() * recv_count elements; rank r receives block r of the reduction (recv_count elements).
  // In place when recv == send + rank() * recv_count.
  virtual void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DataType type,
                              ReduceOp op) = 0;
  virtual Work reduce_scatter_async(const void* send, void* recv, std::size_t recv_count, DataType type,
                                    ReduceOp op) = 0;

  virtual void barrier() = 0;

  // Collective: every rank asks for the same `bytes` (kInvalidArgument otherwise, on every rank). Returns
  // host memory of `bytes` for this rank (empty for 0). On the shared-memory transport every rank's
  // buffer is mapped by every other rank (the analogue of NCCL's user-buffer registration), and an
  // allreduce larger than 64 KiB whose send and recv lie in such buffers on every rank reduces straight
  // from the other ranks' send buffers into every rank's recv buffer: no staging copies, half the memory
  // traffic (docs/collectives-shm.md); reduce_scatter and allgather of more than 64 KiB in all likewise
  // read or write the other ranks' buffers directly. Other host transports return ordinary memory (calls on it work
  // as on any buffer). The nccl backend throws kInvalidArgument (its buffers are device memory).
  // Failures (no room in /dev/shm, more than 64 live shared buffers) throw on every rank.
  virtual SharedBuffer allocate_shared(std::size_t bytes);

 private:
  friend std::unique_ptr<Communicator> make_communicator(const CommOptions& options);
  std::string selection_note_;
  std::string transport_label_;  // what transport_name() returns
  friend const char* transport_name(const Communicator& comm);
};

// Builds the communicator over all ranks of the job (MpiRuntime must be alive).
std::unique_ptr<Communicator> make_communicator(const CommOptions& options = {});

// What a communicator moves bytes with: its backend's name ("shm", "mpi", "hierarchical", "nccl"),
// followed by "; " and its selection_note() when there is one. Valid as long as the communicator.
const char* transport_name(const Communicator& comm);

// The counter `name` of comm.statistics(), 0 when the backend does not count it.
std::uint64_t statistic(const Communicator& comm, std::string_view name);

// Shared-memory transport (also inside hierarchical; zeros elsewhere), from statistics(): how many large (pipelined) allreduces so far wrote the
// staging buffers with plain stores and how many with streaming ones (see ShmStaging), and how many
// allreduces, reduce_scatters and allgathers went straight between shared buffers (allocate_shared) without staging. Read it while no
// call of `comm` is outstanding.
struct ShmStagingCounts {
  std::uint64_t cached = 0;
  std::uint64_t streaming = 0;
  std::uint64_t direct = 0;
  // Direct reduce_scatters that evicted the lines they read from other ranks (placement-dependent).
  std::uint64_t evicted = 0;
  // Collectives on ordinary buffers that took the single-copy path (cross-memory attach; see ShmCopy).
  std::uint64_t single = 0;
  // Whether the start-up probe found cross-memory attach permitted between every pair of ranks.
  bool single_permitted = false;
};
ShmStagingCounts shm_staging_counts(const Communicator& comm);

// kAuto's copy-path probe on the shared-memory transport (also inside hierarchical), from statistics():
// `figures` is empty until it ran (at the first ordinary allreduce of at least 32 KiB) and wherever it
// never runs (other modes, cross-memory attach refused, 1 rank, CommOptions::shm_copy_probe off, other
// backends): 8 figures, the 4 probed sizes in place, then out of place. The figures and the choices are
// the same on every rank; cost_us is this rank's. Read it
// while no call of `comm` is outstanding.
struct ShmCopyProbe {
  bool injected = false;  // the figures came from CommOptions::shm_copy_probe_figures_for_testing
  double cost_us = 0;
  std::vector<ShmCopyProbeFigure> figures;
};
ShmCopyProbe shm_copy_probe(const Communicator& comm);

}  // namespace mirror::coll
