// shm_cross_memory.h — CrossMemory: one rank's access to the other ranks' ordinary memory on the same
// host through Linux cross-memory attach (process_vm_readv / process_vm_writev: the kernel copies
// straight between two processes' address spaces, one copy, no shared mapping needed), and the start-up
// probe that decides whether the single-copy paths of the shared-memory transport may use it.
//
// The probe (collective over the group): every rank publishes its pid, the address of a probe word and
// the word's random value (MPI_Allgather); every rank reads every other rank's word; then all ranks
// gather each rank's outcome, so they agree: permitted only when every pair worked. What refuses it:
// another user (EPERM), Yama's ptrace_scope >= 1 without a ptracer grant (EPERM), seccomp (ENOSYS /
// EPERM), ranks in different pid namespaces (ESRCH, or a wrong value read from an unrelated process).
// CommOptions::shm_copy_refused_for_testing makes one rank report a refusal.
//
// Transfers never block on another rank: they complete or fail at once (a peer that died: ESRCH; an
// address no longer mapped: EFAULT), and a failure throws naming the rank, the bytes and errno. Waiting
// for a peer to be ready is the caller's business (the bounded syncs of ShmControl).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include <mpi.h>

namespace mirror::coll::detail {

class CrossMemory {
 public:
  CrossMemory() = default;  // not permitted
  // Collective over `group`; `refuse_for_testing`: this rank reports a refusal instead of probing.
  static CrossMemory probe(MPI_Comm group, bool refuse_for_testing);

  // The same on every rank of the group.
  bool permitted() const { return permitted_; }
  // "permitted (…)" or why not (which rank could not read which, and the errno): for reports.
  const std::string& describe() const { return describe_; }

  // bytes from rank q's address `remote` into `local` / from `local` to rank q's `remote`.
  void read(int q, const void* remote, void* local, std::size_t bytes) const;
  void write(int q, void* remote, const void* local, std::size_t bytes) const;

 private:
  void transfer(bool write, int q, void* remote, void* local, std::size_t bytes) const;

  std::vector<pid_t> pids_;
  bool permitted_ = false;
  std::string describe_ = "not probed";
};

}  // namespace mirror::coll::detail
