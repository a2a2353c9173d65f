// shm_segment.cc — ShmSegment: create (rank 0), broadcast the name, map (all), unlink (rank 0).
#include "shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>

#include "mpi_check.h"

namespace mirror::coll::detail {
namespace {

constexpr int kNameMax = 128;

std::string errno_text(const char* what, int err) {
  std::ostringstream s;
  s << what << ": " << std::strerror(err);
  return s.str();
}

std::string unique_name() {
  std::random_device rd;
  const auto t = static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::ostringstream s;
  s << "/mirror-shm-" << ::getpid() << "-" << std::hex << ((static_cast<unsigned long long>(rd()) << 32) ^ rd() ^ t);
  return s.str();
}

// Rank 0: makes the named segment of `bytes`; returns the fd or -1 with *err set.
int create_named(std::size_t bytes, std::string* name, std::string* err) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    *name = unique_name();
    const int fd = ::shm_open(name->c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      *err = errno_text(("shm_open(" + *name + ")").c_str(), errno);
      return -1;
    }
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      *err = errno_text("ftruncate", errno);
    } else if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
      *err = errno_text("posix_fallocate (is /dev/shm full?)", rc);
    } else {
      return fd;
    }
    ::close(fd);
    ::shm_unlink(name->c_str());
    return -1;
  }
  *err = "shm_open: could not find an unused name";
  return -1;
}

}  // namespace

std::unique_ptr<ShmSegment> ShmSegment::create(MPI_Comm comm, std::size_t bytes, std::string* why) {
  int rank = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  std::string name, err;
  int fd = -1;
  char buf[kNameMax] = {};
  if (rank == 0) {
    fd = create_named(bytes, &name, &err);
    if (fd >= 0) std::strncpy(buf, name.c_str(), kNameMax - 1);
  }
  MIRROR_CHECK_MPI(MPI_Bcast(buf, kNameMax, MPI_CHAR, 0, comm));
  name = buf;
  void* map = MAP_FAILED;
  if (!name.empty()) {
    if (rank != 0) {
      fd = ::shm_open(name.c_str(), O_RDWR, 0600);
      if (fd < 0) err = errno_text(("shm_open(" + name + ")").c_str(), errno);
    }
    if (fd >= 0) {
      // MAP_POPULATE: every page is in this rank's page table from the start, so no collective pays a page
      // fault the first time it reaches a part of a staging buffer (the lanes, shm_communicator.h).
      map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
      if (map == MAP_FAILED) err = errno_text("mmap", errno);
      ::close(fd);
    }
  }
  // Everyone has tried to map: the name can go now, whatever happened.
  int ok = map != MAP_FAILED ? 1 : 0, all_ok = 0;
  MIRROR_CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0 && !name.empty()) ::shm_unlink(name.c_str());
  if (all_ok) return std::unique_ptr<ShmSegment>(new ShmSegment(static_cast<unsigned char*>(map), bytes, name));
  if (map != MAP_FAILED) ::munmap(map, bytes);
  // Tell every rank which rank failed first and why.
  int first_bad = ok ? INT32_MAX : rank, bad = 0;
  MIRROR_CHECK_MPI(MPI_Allreduce(&first_bad, &bad, 1, MPI_INT, MPI_MIN, comm));
  char msg[256] = {};
  if (rank == bad) std::strncpy(msg, err.c_str(), sizeof msg - 1);
  MIRROR_CHECK_MPI(MPI_Bcast(msg, sizeof msg, MPI_CHAR, bad, comm));
  std::ostringstream s;
  s << "shared-memory segment of " << bytes << " bytes could not be set up: rank " << bad << ": " << msg;
  *why = s.str();
  return nullptr;
}

ShmSegment::~ShmSegment() { ::munmap(data_, bytes_); }

}  // namespace mirror::coll::detail
