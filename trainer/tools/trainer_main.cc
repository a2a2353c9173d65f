// trainer_main.cc — `trainer`: data-parallel training, one process per GPU (or CPU rank), under mpirun or
// mirrorrun. Flags: trainer --help (config.cc holds the table).
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <iostream>

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
    // SIGTERM/SIGINT (preemption, Ctrl-C): finish the step, write a checkpoint, exit.
    std::signal(SIGTERM, on_stop_signal);
    std::signal(SIGINT, on_stop_signal);

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
    ctx.out = rank == 0 ? &std::cout : nullptr;
    ctx.stop_requested = &g_stop_requested;
    const train::TrainSummary summary = train::train(config, ctx);
    if (summary.stopped_early && rank == 0)
      std::cout << "stopped by signal at step " << summary.steps << "; resume with --resume auto" << std::endl;
    return summary.stopped_early ? exit_code::kStopped : exit_code::kOk;
  });
}
