// shared_buffer.cc — Communicator::allocate_shared for transports without shared memory (ordinary host
// memory after the same collective size check), and the size agreement every transport shares.
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "shared_buffer.h"

namespace mirror::coll {
namespace detail {

void agree_shared_bytes(Communicator& comm, std::uint64_t bytes) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  static_assert(sizeof(std::uint64_t) == sizeof(std::int64_t));
  comm.allgather(&bytes, all.data(), 1, DataType::kInt64);  // moved bit for bit
  for (int q = 0; q < comm.size(); ++q) {
    if (all[q] == bytes) continue;
    std::ostringstream s;
    for (int r = 0; r < comm.size(); ++r) s << (r ? ", " : "") << "rank " << r << ": " << all[r];
    MIRROR_THROW(kInvalidArgument, "allocate_shared: every rank must ask for the same number of bytes, got "
                                       << s.str() << " (seen on rank " << comm.rank() << ")");
  }
}

SharedBuffer host_shared_buffer(std::size_t bytes) {
  if (bytes == 0) return {};
  const std::size_t rounded = shared_bytes_rounded(bytes);
  void* p = std::aligned_alloc(kSharedAlign, rounded);
  MIRROR_CHECK(p != nullptr, kInvalidArgument, "allocate_shared: out of memory for " << bytes << " bytes");
  std::memset(p, 0, rounded);
  return SharedBuffer(std::shared_ptr<void>(p, [](void* q) { std::free(q); }), bytes);
}

}  // namespace detail

SharedBuffer Communicator::allocate_shared(std::size_t bytes) {
  detail::agree_shared_bytes(*this, bytes);
  return detail::host_shared_buffer(bytes);
}

}  // namespace mirror::coll
