// shm_segment.h — ShmSegment: one POSIX shared-memory segment mapped by every rank of an MPI
// communicator. Rank 0 creates it under a name unique to the job ("/mirror-shm-<pid>-<random>",
// O_CREAT|O_EXCL), sizes and allocates it (posix_fallocate: a full /dev/shm fails here, not later with
// SIGBUS), broadcasts the name; every rank maps it; as soon as all have mapped it rank 0 unlinks the
// name, so nothing is left in /dev/shm even if a rank crashes later. Memory starts zeroed.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

namespace mirror::coll::detail {

class ShmSegment {
 public:
  // Collective over `comm`. Returns the mapped segment, or nullptr on EVERY rank (agreed over MPI) with
  // *why saying which rank failed and how, when any rank could not create or map it.
  static std::unique_ptr<ShmSegment> create(MPI_Comm comm, std::size_t bytes, std::string* why);
  ~ShmSegment();  // munmap; never throws
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  unsigned char* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }  // already unlinked

 private:
  ShmSegment(unsigned char* data, std::size_t bytes, std::string name)
      : data_(data), bytes_(bytes), name_(std::move(name)) {}
  unsigned char* data_;
  std::size_t bytes_;
  std::string name_;
};

}  // namespace mirror::coll::detail
