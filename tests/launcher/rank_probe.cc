// rank_probe.cc — a small program for mirrorrun's end-to-end tests, run as each rank under mpirun (no MPI
// inside: it reads the rank from Open MPI's environment). Modes:
//   print [VAR...]        print "rank R of S local L restart C", then "VAR=value" for each VAR, and exit 0
//   exit CODE RANK        rank RANK exits with CODE after 0.2 s; the others wait (up to 30 s) to be stopped
//   fail-once DIR         rank 0 exits 4 the first time (no DIR/rank0.ran yet), every later time 0
//   wait-signal DIR       write DIR/ready.R, wait for SIGTERM/SIGINT (up to 30 s, else exit 9), then take
//                         1.5 s (longer than mpirun's own 1 s kill delay: a checkpoint), write DIR/stopped.R
//                         holding the signal number, exit 0
//   ignore-signal DIR     write DIR/ready.R (holding the pid), ignore SIGTERM/SIGINT, exit 9 after 30 s
//   report-error DIR      write DIR/ready.R (holding the pid); rank 1 prints Mirror's fatal-error line
//                         "[rank 1] error: ..." and, like every rank, goes on running (exit 9 after 30 s): a
//                         job whose mpirun does not end after a rank's error
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "mirror/launch/local_rank.h"

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

bool exists(const std::string& path) { return std::ifstream(path).good(); }

int usage() {
  std::fprintf(stderr, "usage: rank_probe print [VAR...] | exit CODE RANK | fail-once DIR | wait-signal DIR | ignore-signal DIR\n");
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  const int rank = env_int("OMPI_COMM_WORLD_RANK", 0);
  const int size = env_int("OMPI_COMM_WORLD_SIZE", 1);
  const auto local = mirror::launch::read_local_rank();
  if (mode == "print") {
    std::printf("rank %d of %d local %d (%s) restart %d threads %s\n", rank, size, local ? local->rank : -1,
                local ? local->source.c_str() : "none", env_int("MIRROR_RESTART_COUNT", -1),
                std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "unset");
    for (int i = 2; i < argc; ++i) {
      std::printf("%s=%s\n", argv[i], std::getenv(argv[i]) ? std::getenv(argv[i]) : "(unset)");
    }
    return 0;
  }
  if (mode == "exit" && argc == 4) {
    if (rank == std::atoi(argv[3])) {
      sleep_s(0.2);
      std::fprintf(stderr, "rank %d exits with %d\n", rank, std::atoi(argv[2]));
      return std::atoi(argv[2]);
    }
    for (int i = 0; i < 300; ++i) sleep_s(0.1);
    return 0;
  }
  if (mode == "fail-once" && argc == 3) {
    const std::string marker = std::string(argv[2]) + "/rank" + std::to_string(rank) + ".ran";
    const bool first = !exists(marker);
    std::ofstream(marker) << "ran\n";
    std::printf("rank %d attempt %s (MIRROR_RESTART_COUNT=%d)\n", rank, first ? "first" : "later",
                env_int("MIRROR_RESTART_COUNT", -1));
    return rank == 0 && first ? 4 : 0;
  }
  if (mode == "wait-signal" && argc == 3) {
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    const std::string dir = argv[2];
    std::ofstream(dir + "/ready." + std::to_string(rank)) << getpid() << "\n";
    for (int i = 0; i < 300 && !g_signal; ++i) sleep_s(0.1);
    if (!g_signal) return 9;
    sleep_s(1.5);
    std::ofstream(dir + "/stopped." + std::to_string(rank)) << g_signal << "\n";
    return 0;
  }
  if (mode == "ignore-signal" && argc == 3) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    std::ofstream(std::string(argv[2]) + "/ready." + std::to_string(rank)) << getpid() << "\n";
    for (int i = 0; i < 300; ++i) sleep_s(0.1);
    return 9;
  }
  if (mode == "report-error" && argc == 3) {
    std::ofstream(std::string(argv[2]) + "/ready." + std::to_string(rank)) << getpid() << "\n";
    if (rank == 1) {
      std::fprintf(stderr, "[rank 1] error: simulated fatal error (rank_probe report-error)\n");
      std::fflush(stderr);
    }
    for (int i = 0; i < 300; ++i) sleep_s(0.1);
    return 9;
  }
  return usage();
}
