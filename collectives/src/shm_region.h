// shm_region.h — ShmRegion: one shared buffer of the shared-memory transport (Communicator::
// allocate_shared), as this rank sees it: its own part and every other rank's part, all mapped here.
//
// Every rank creates its part as a POSIX shared-memory object named after the communicator's segment,
// the region's slot and the rank ("<segment>-b<slot>-r<rank>", O_CREAT|O_EXCL, posix_fallocate so a full
// /dev/shm fails here and not later with SIGBUS), the ranks agree (allgather) that all parts exist, map
// every other rank's part, agree again, and unlink their own name: a rank's name is gone when its
// create() returns or throws (so nothing is left once every rank has), and the memory lives until the last rank unmaps it. Any failure throws
// on every rank, naming the rank and the system call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

class ShmRegion {
 public:
  // Collective over `comm` (its allgather moves the status words). `prefix` is the segment's name.
  static std::shared_ptr<ShmRegion> create(Communicator& comm, const std::string& prefix, int slot,
                                           std::size_t bytes);
  ~ShmRegion();  // munmap every part; never throws
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  int slot() const { return slot_; }
  std::size_t bytes() const { return bytes_; }
  unsigned char* part(int rank) const { return parts_[static_cast<std::size_t>(rank)]; }
  // Whether [p, p + n) lies in this rank's own part; *offset is p's offset into it.
  bool holds(const void* p, std::size_t n, std::size_t* offset) const;

 private:
  ShmRegion(int slot, std::size_t bytes, int rank, int size);
  int slot_;
  std::size_t bytes_;
  int rank_;
  std::vector<unsigned char*> parts_;  // null until mapped
};

}  // namespace mirror::coll::detail
