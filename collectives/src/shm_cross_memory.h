// shm_cross_memory.h — CrossMemory: one rank's access to the other ranks' ordinary memory on the same
// host through Linux cross-memory attach (process_vm_readv / process_vm_writev: the kernel copies
// straight between two processes' address spaces, one copy, no shared mapping needed), and the start-up
// probe that decides whether the single-copy paths of the shared-memory transport may use it.
//
// The probe (ShmCommunicator::probe_cross_memory, at construction, over the segment's control block, no
// MPI): every rank publishes its pid, the address of a probe word and the word's random value; after a
// sync every rank reads every other rank's word (read_word) and publishes its outcome; after another
// sync every rank builds the same CrossMemory from all outcomes: permitted only when every pair worked.
// What refuses it: another user (EPERM), Yama's ptrace_scope >= 1 without a ptracer grant (EPERM),
// seccomp (ENOSYS / EPERM), ranks in different pid namespaces (ESRCH, or a wrong value read from an
// unrelated process). CommOptions::shm_copy_refused_for_testing makes one rank report a refusal.
//
// Transfers never block on another rank: they complete or fail at once (a peer that died: ESRCH; an
// address no longer mapped: EFAULT), and a failure throws naming the rank, the bytes and errno. Waiting
// for a peer to be ready is the caller's business (the bounded syncs of ShmControl).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mirror::coll::detail {

class CrossMemory {
 public:
  // One rank's probe outcome: 0 worked; > 0 the errno of its first failed read; kWrongValue; kRefused
  // (the test seam). `peer`: the rank it failed on.
  static constexpr std::int64_t kWrongValue = -1, kRefused = -2;
  struct Outcome {
    std::int64_t error = 0;
    std::int64_t peer = -1;
  };
  // Reads the word at `address` of process `pid`: 0, errno, or kWrongValue when it is not `value`.
  static std::int64_t read_word(pid_t pid, std::uint64_t address, std::uint64_t value);

  CrossMemory() = default;  // not permitted
  // From every rank's pid and outcome (the same on every rank).
  CrossMemory(std::vector<pid_t> pids, const std::vector<Outcome>& outcomes);

  // The same on every rank of the group.
  bool permitted() const { return permitted_; }
  // "permitted" or why not (which rank could not read which, and the errno): for reports.
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
