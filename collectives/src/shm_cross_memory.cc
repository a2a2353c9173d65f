// shm_cross_memory.cc — CrossMemory: the start-up probe over MPI and the checked process_vm_readv/writev.
#include "shm_cross_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>

#include "mirror/error.h"
#include "mpi_check.h"

namespace mirror::coll::detail {
namespace {

// What one rank publishes for the probe.
struct ProbeCard {
  std::int64_t pid;
  std::uint64_t address;  // of its probe word
  std::uint64_t value;    // the word's value
};

// One rank's outcome: 0 worked; > 0 the errno of its first failed read; -1 read a wrong value; -2 the test
// seam refused; `peer` the rank it failed on.
struct ProbeOutcome {
  std::int64_t error;
  std::int64_t peer;
  double micros;  // its reads of every peer's word, in all
};

std::string errno_text(int e) {
  std::ostringstream s;
  s << std::strerror(e) << " (errno " << e << ")";
  return s.str();
}

}  // namespace

CrossMemory CrossMemory::probe(MPI_Comm group, bool refuse_for_testing) {
  int rank = 0, size = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(group, &rank));
  MIRROR_CHECK_MPI(MPI_Comm_size(group, &size));
  volatile std::uint64_t word = std::random_device{}() | std::uint64_t{std::random_device{}()} << 32;
  ProbeCard mine{static_cast<std::int64_t>(::getpid()), reinterpret_cast<std::uint64_t>(&word), word};
  std::vector<ProbeCard> cards(static_cast<std::size_t>(size));
  MIRROR_CHECK_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, cards.data(), sizeof mine, MPI_BYTE, group));

  ProbeOutcome outcome{0, -1, 0.0};
  const auto start = std::chrono::steady_clock::now();
  for (int q = 0; q < size && outcome.error == 0; ++q) {
    if (q == rank) continue;
    if (refuse_for_testing) {
      outcome = {-2, q, 0.0};
      break;
    }
    std::uint64_t seen = 0;
    iovec local{&seen, sizeof seen};
    iovec remote{reinterpret_cast<void*>(cards[q].address), sizeof seen};
    const ssize_t n = ::process_vm_readv(static_cast<pid_t>(cards[q].pid), &local, 1, &remote, 1, 0);
    if (n < 0) outcome = {errno, q, 0.0};
    else if (n != static_cast<ssize_t>(sizeof seen) || seen != cards[q].value) outcome = {-1, q, 0.0};
  }
  outcome.micros = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  // Also keeps every probe word alive until every rank has read it.
  std::vector<ProbeOutcome> all(static_cast<std::size_t>(size));
  MIRROR_CHECK_MPI(MPI_Allgather(&outcome, sizeof outcome, MPI_BYTE, all.data(), sizeof outcome, MPI_BYTE, group));

  CrossMemory cm;
  cm.permitted_ = size > 1;
  double slowest = 0;
  std::ostringstream why;
  for (int q = 0; q < size; ++q) {
    const ProbeOutcome& o = all[q];
    slowest = std::max(slowest, o.micros);
    if (o.error == 0 || !cm.permitted_) continue;
    cm.permitted_ = false;
    why << "refused: rank " << q << " could not read rank " << o.peer << "'s memory: "
        << (o.error == -2   ? std::string("refused by the test seam (CommOptions::shm_copy_refused_for_testing)")
            : o.error == -1 ? std::string("read a different value (the ranks are in different pid namespaces?)")
                            : errno_text(static_cast<int>(o.error)));
  }
  if (size == 1) why << "not needed (1 rank)";
  else if (cm.permitted_) why << "permitted (probe: every rank read every other rank's word, slowest " << slowest << " us)";
  cm.describe_ = why.str();
  if (cm.permitted_) {
    for (const ProbeCard& c : cards) cm.pids_.push_back(static_cast<pid_t>(c.pid));
  }
  return cm;
}

void CrossMemory::read(int q, const void* remote, void* local, std::size_t bytes) const {
  transfer(false, q, const_cast<void*>(remote), local, bytes);
}

void CrossMemory::write(int q, void* remote, const void* local, std::size_t bytes) const {
  transfer(true, q, remote, const_cast<void*>(local), bytes);
}

void CrossMemory::transfer(bool write, int q, void* remote, void* local, std::size_t bytes) const {
  MIRROR_CHECK(permitted_ && q >= 0 && static_cast<std::size_t>(q) < pids_.size(), kInternal,
               "cross-memory transfer with rank " << q << " without a successful probe");
  auto* l = static_cast<unsigned char*>(local);
  auto* r = static_cast<unsigned char*>(remote);
  while (bytes > 0) {
    iovec liov{l, bytes}, riov{r, bytes};
    const ssize_t n = write ? ::process_vm_writev(pids_[q], &liov, 1, &riov, 1, 0)
                            : ::process_vm_readv(pids_[q], &liov, 1, &riov, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : 0;
      MIRROR_THROW(kRemote, "single-copy " << (write ? "write of " : "read of ") << bytes << " bytes "
                                           << (write ? "to" : "from") << " rank " << q << " (pid " << pids_[q]
                                           << ") failed: " << (e ? errno_text(e) : std::string("nothing moved"))
                                           << (e == ESRCH ? "; that rank has exited" : "")
                                           << (e == EFAULT ? "; its buffer is no longer mapped (it left the call?)" : ""));
    }
    l += n;
    r += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

}  // namespace mirror::coll::detail
