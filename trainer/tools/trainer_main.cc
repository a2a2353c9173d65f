// trainer_main.cc — `trainer`: data-parallel training, one process per GPU (or CPU rank), under mpirun or
// mirrorrun. Flags: trainer --help (config.cc holds the table).
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <string>
#include <iostream>
#include <thread>

#include "mirror/coll/communicator.h"
#include "mirror/agreed_error.h"
#include "mirror/coll/runtime.h"
#include "mirror/train/config.h"
#include "mirror/nn/device.h"
#include "mirror/train/setup_agreement.h"
#include "mirror/train/training.h"
#include "mpi_main.h"

namespace {
std::atomic<bool> g_stop_requested{false};

// --progress auto: a bar only when the job's output is a terminal. Under Open MPI every rank's stdout is a
// pseudo-terminal whatever mpirun's output is, so a rank under MPI trusts only mirrorrun's word for it
// (MIRROR_STDOUT_IS_TTY); plain mpirun gets no bar unless --progress on.
bool output_is_terminal() {
  if (const char* told = std::getenv("MIRROR_STDOUT_IS_TTY")) return std::string(told) == "1";
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("SLURM_PROCID")) return false;
  return ::isatty(STDOUT_FILENO) != 0;
}
extern "C" void on_stop_signal(int) { g_stop_requested.store(true); }

// SIGTERM/SIGINT (preemption, Ctrl-C) are taken on a thread of their own, never on a thread that computes.
// Why: oneDNN 2.x's JIT sgemm (jit_avx_gemm_f32 / jit_avx512_common_gemm_f32 before oneDNN v3.12,
// uxlfoundation/oneDNN#4845) points rsp at its heap workspace when K exceeds what fits on the stack (K > 252 on
// AVX2: cnn-bn's fc1 forward has K = 3136). A handler run on that thread meanwhile puts its signal frame into
// the heap below the workspace, and a later malloc aborts ("malloc(): smallbin double linked list corrupted",
// seen in conv2d backward right after a SIGTERM, before the step could end). So this blocks both signals on
// the calling (main) thread, which every thread started after it inherits (OpenMP's, the loader's, the
// collectives' progress thread), and one idle thread with them unblocked runs the handler. Threads MPI_Init
// started earlier may run it too; they never run oneDNN.
class StopSignalThread {
 public:
  StopSignalThread() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    std::signal(SIGTERM, on_stop_signal);
    std::signal(SIGINT, on_stop_signal);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // a signal arriving from here on waits for the thread below
    thread_ = std::thread([this, set] {
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return done_; });  // the handler interrupts this wait, which then resumes
    });
  }
  ~StopSignalThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StopSignalThread(const StopSignalThread&) = delete;
  StopSignalThread& operator=(const StopSignalThread&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};
}  // namespace

int main(int argc, char** argv) {
  return mirror::tools::run_mpi_main(argc, argv, [](int& argc, char**& argv, int rank) {
    using namespace mirror;
    train::TrainConfig config;
    if (auto code = train::parse_train_config(argc, argv, config, rank == 0)) return *code;
    const int world = coll::MpiRuntime::world_size();
    try {
      train::validate(config, world);  // the same verdict on every rank: rank 0 says it, all return 2
    } catch (const Error& e) {
      if (rank == 0) std::cerr << "error: " << e.message() << "\nRun with --help for the flags.\n";
      return exit_code::kUsage;
    }
    if (config.progress == train::Toggle::kAuto)
      config.progress = output_is_terminal() ? train::Toggle::kOn : train::Toggle::kOff;
    // SIGTERM/SIGINT (preemption, Ctrl-C): finish the step, write a checkpoint, exit. Before any thread that
    // computes exists (see StopSignalThread).
    const StopSignalThread stop_signals;

    const int local_rank = coll::MpiRuntime::local_rank();
    coll::CommOptions options;
    options.timeout = std::chrono::milliseconds(static_cast<long long>(config.timeout_s * 1000));
    options.backend = config.host_transport;
    options.check_consistency = config.check_collectives;
    auto control = coll::make_communicator(options);
    std::unique_ptr<coll::Communicator> nccl;
    // The device first: "--device cuda" without a GPU is reported as such (once, exit 3), not as a missing NCCL.
    nn::Device device;
    train::run_agreed_setup(*control, [&] { device = nn::resolve_device(config.device, local_rank, config.blas_threads); });
    if (config.backend == train::BackendChoice::kNccl ||
        (config.backend == train::BackendChoice::kAuto && device.is_cuda())) {
      options.backend = coll::parse_backend("nccl");
      nccl = coll::make_communicator(options);
    }
    train::TrainContext ctx;
    ctx.control = control.get();
    ctx.gradients = nccl ? nccl.get() : control.get();
    ctx.local_rank = local_rank;
    ctx.device = device;
    ctx.out = rank == 0 ? &std::cout : nullptr;
    ctx.stop_requested = &g_stop_requested;
    const train::TrainSummary summary = train::train(config, ctx);
    if (summary.stopped_early && rank == 0)
      std::cout << "stopped by signal at step " << summary.steps << "; resume with --resume auto" << std::endl;
    return summary.stopped_early ? exit_code::kStopped : exit_code::kOk;
  });
}
