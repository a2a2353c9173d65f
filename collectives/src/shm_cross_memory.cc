// shm_cross_memory.cc — CrossMemory: the probe read, the agreed outcome and the checked process_vm_readv/writev.
#include "shm_cross_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "mirror/error.h"

namespace mirror::coll::detail {
namespace {

std::string errno_text(int e) {
  std::ostringstream s;
  s << std::strerror(e) << " (errno " << e << ")";
  return s.str();
}

}  // namespace

std::int64_t CrossMemory::read_word(pid_t pid, std::uint64_t address, std::uint64_t value) {
  std::uint64_t seen = 0;
  iovec local{&seen, sizeof seen};
  iovec remote{reinterpret_cast<void*>(address), sizeof seen};
  const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n < 0) return errno;
  return n == static_cast<ssize_t>(sizeof seen) && seen == value ? 0 : kWrongValue;
}

CrossMemory::CrossMemory(std::vector<pid_t> pids, const std::vector<Outcome>& outcomes)
    : pids_(std::move(pids)), permitted_(pids_.size() > 1) {
  std::ostringstream why;
  for (std::size_t q = 0; q < outcomes.size() && permitted_; ++q) {
    const Outcome& o = outcomes[q];
    if (o.error == 0) continue;
    permitted_ = false;
    why << "refused: rank " << q << " could not read rank " << o.peer << "'s memory: "
        << (o.error == kRefused      ? std::string("refused by the test seam (CommOptions::shm_copy_refused_for_testing)")
            : o.error == kWrongValue ? std::string("read a different value (the ranks are in different pid namespaces?)")
                                     : errno_text(static_cast<int>(o.error)));
  }
  if (pids_.size() <= 1) why << "not needed (1 rank)";
  else if (permitted_) why << "permitted";
  describe_ = why.str();
  if (!permitted_) pids_.clear();
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
