// fault_probe.cc — a small MPI program that runs a loop of collectives through mirror::collectives and
// lets one rank misbehave at a chosen iteration, for tests/faults/run_faults.sh:
//   mismatch-count | mismatch-dtype | mismatch-op   the faulty rank issues a different collective
//   stall                                            the faulty rank sleeps --stall-s before its call
//   die-kill | die-abort                             the faulty rank SIGKILLs itself / calls std::abort()
//   die-throw                                        the faulty rank throws; main prints it and returns 1
//                                                    (MPI_Finalize, no MPI_Abort: the others must time out)
//   none                                             no fault (the loop must complete, exit 0)
// Every rank prints "[rank r] error at <unix ms>: <what>" for an error and returns 1; the faulty rank prints
// "FAULT <scenario> rank <r> at <unix ms>" just before the fault.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"

namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct ProbeOptions {
  std::string scenario = "none";
  std::string transport = "mpi";
  int faulty_rank = -1;  // -1: the last rank
  int at = 5;            // iteration of the fault
  int iters = 20;
  long long timeout_ms = 2000;
  double stall_s = 6.0;
  std::size_t count = 1000;
  bool check_collectives = true;  // --check-collectives on|off
  int fake_hosts = 0;             // --fake-hosts K (CommOptions::hosts_for_testing)
};

ProbeOptions parse(int argc, char** argv) {
  ProbeOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--scenario") o.scenario = v;
    else if (k == "--transport") o.transport = v;
    else if (k == "--rank") o.faulty_rank = std::stoi(v);
    else if (k == "--at") o.at = std::stoi(v);
    else if (k == "--iters") o.iters = std::stoi(v);
    else if (k == "--timeout-ms") o.timeout_ms = std::stoll(v);
    else if (k == "--stall-s") o.stall_s = std::stod(v);
    else if (k == "--count") o.count = std::stoul(v);
    else if (k == "--check-collectives" && (v == "on" || v == "off")) o.check_collectives = v == "on";
    else if (k == "--fake-hosts") o.fake_hosts = std::stoi(v);
    else if (k == "--tag") {}  // marks the processes of one run (the script looks for leftovers by it)
    else throw std::invalid_argument("fault_probe: unknown flag " + k);
  }
  return o;
}

void announce_fault(const ProbeOptions& o, int rank) {
  std::fprintf(stderr, "FAULT %s rank %d at %lld\n", o.scenario.c_str(), rank, now_ms());
  std::fflush(stderr);
}

int run(const ProbeOptions& o, int rank) {
  using namespace mirror::coll;
  CommOptions opts;
  opts.timeout = std::chrono::milliseconds(o.timeout_ms);
  opts.backend = parse_backend("host", o.transport);
  opts.check_consistency = o.check_collectives;
  opts.hosts_for_testing = o.fake_hosts;
  auto comm = make_communicator(opts);
  const int faulty = o.faulty_rank >= 0 ? o.faulty_rank : comm->size() - 1;
  std::vector<float> buf(o.count + 1, 1.0f);
  for (int it = 0; it < o.iters; ++it) {
    std::size_t n = o.count;
    DataType type = DataType::kFloat32;
    bool broadcast = false;
    if (rank == faulty && it == o.at) {
      const std::string& s = o.scenario;
      if (s != "none") announce_fault(o, rank);
      if (s == "mismatch-count") n = o.count - 1;
      else if (s == "mismatch-dtype") type = DataType::kInt32;
      else if (s == "mismatch-op") broadcast = true;
      else if (s == "stall") std::this_thread::sleep_for(std::chrono::duration<double>(o.stall_s));
      else if (s == "die-kill") ::raise(SIGKILL);
      else if (s == "die-abort") std::abort();
      else if (s == "die-throw") throw std::runtime_error("fault_probe: rank " + std::to_string(rank) + " throws at iteration " + std::to_string(it));
      else if (s != "none") throw std::invalid_argument("fault_probe: unknown scenario " + s);
    }
    if (broadcast) {
      comm->broadcast(buf.data(), n, type, 0);
    } else {
      for (auto& x : buf) x = 1.0f;
      comm->allreduce(buf.data(), buf.data(), n, type, ReduceOp::kSum);
      if (type == DataType::kFloat32 && buf[0] != static_cast<float>(comm->size())) {
        throw std::runtime_error("fault_probe: wrong allreduce result " + std::to_string(buf[0]));
      }
    }
  }
  comm->barrier();
  if (rank == 0) std::printf("fault_probe: %d iterations done\n", o.iters);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mirror::coll::MpiRuntime runtime(&argc, &argv);
  const int rank = mirror::coll::MpiRuntime::world_rank();
  try {
    return run(parse(argc, argv), rank);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] error at %lld: %s\n", rank, now_ms(), e.what());
    std::fflush(stderr);
    return 1;
  }
}
