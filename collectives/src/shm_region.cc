// shm_region.cc — ShmRegion: create every rank's part, agree, map the others' parts, agree, unlink.
#include "shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "mirror/error.h"

namespace mirror::coll::detail {
namespace {

// What a rank reports after each stage: 0, or the failed step and errno.
enum Step : std::int64_t { kOk = 0, kCreate, kTruncate, kAllocate, kMapOwn, kOpenPeer, kMapPeer };

const char* step_text(std::int64_t step) {
  switch (step) {
    case kCreate: return "shm_open(O_CREAT|O_EXCL) of its part";
    case kTruncate: return "ftruncate of its part";
    case kAllocate: return "posix_fallocate of its part (is /dev/shm full?)";
    case kMapOwn: return "mmap of its part";
    case kOpenPeer: return "shm_open of another rank's part";
    case kMapPeer: return "mmap of another rank's part";
    default: return "an unknown step";
  }
}

std::int64_t status(Step step, int err) { return step == kOk ? 0 : (static_cast<std::int64_t>(err) << 8) | step; }

std::string part_name(const std::string& prefix, int slot, int rank) {
  return prefix + "-b" + std::to_string(slot) + "-r" + std::to_string(rank);
}

void* map_fd(int fd, std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Allgathers this rank's status; throws on every rank (naming the first failed rank) unless all are 0.
void agree(Communicator& comm, std::int64_t mine, std::size_t bytes) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(&mine, all.data(), 1, DataType::kInt64);
  for (int q = 0; q < comm.size(); ++q) {
    const std::int64_t s = all[static_cast<std::size_t>(q)];
    if (s == 0) continue;
    MIRROR_THROW(kIo, "allocate_shared(" << bytes << " bytes) failed: rank " << q << ": " << step_text(s & 0xff)
                                         << ": " << std::strerror(static_cast<int>(s >> 8)) << " (seen on rank "
                                         << comm.rank() << ")");
  }
}

}  // namespace

ShmRegion::ShmRegion(int slot, std::size_t bytes, int rank, int size)
    : slot_(slot), bytes_(bytes), rank_(rank), parts_(static_cast<std::size_t>(size), nullptr) {}

ShmRegion::~ShmRegion() {
  for (unsigned char* p : parts_)
    if (p) ::munmap(p, bytes_);
}

bool ShmRegion::holds(const void* p, std::size_t n, std::size_t* offset) const {
  const auto* base = parts_[static_cast<std::size_t>(rank_)];
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < base || c > base + bytes_ || n > static_cast<std::size_t>(base + bytes_ - c)) return false;
  *offset = static_cast<std::size_t>(c - base);
  return true;
}

std::shared_ptr<ShmRegion> ShmRegion::create(Communicator& comm, const std::string& prefix, int slot,
                                             std::size_t bytes) {
  const int rank = comm.rank(), size = comm.size();
  std::shared_ptr<ShmRegion> region(new ShmRegion(slot, bytes, rank, size));
  const std::string own = part_name(prefix, slot, rank);
  // The own name goes as soon as every rank has mapped it, and on every failure path.
  struct Unlink {
    const std::string& name;
    bool armed = false;
    ~Unlink() { if (armed) ::shm_unlink(name.c_str()); }
  } unlink{own};

  Step step = kOk;
  int err = 0;
  const int fd = ::shm_open(own.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    step = kCreate, err = errno;
  } else {
    unlink.armed = true;
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      step = kTruncate, err = errno;
    } else if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
      step = kAllocate, err = rc;
    } else if (void* p = map_fd(fd, bytes); p == nullptr) {
      step = kMapOwn, err = errno;
    } else {
      region->parts_[static_cast<std::size_t>(rank)] = static_cast<unsigned char*>(p);
    }
    ::close(fd);
  }
  agree(comm, status(step, err), bytes);

  for (int q = 0; q < size && step == kOk; ++q) {
    if (q == rank) continue;
    const int peer = ::shm_open(part_name(prefix, slot, q).c_str(), O_RDWR, 0600);
    if (peer < 0) {
      step = kOpenPeer, err = errno;
      break;
    }
    void* p = map_fd(peer, bytes);
    if (p == nullptr) step = kMapPeer, err = errno;
    ::close(peer);
    region->parts_[static_cast<std::size_t>(q)] = static_cast<unsigned char*>(p);
  }
  agree(comm, status(step, err), bytes);
  return region;
}

}  // namespace mirror::coll::detail
