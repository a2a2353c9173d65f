// shared_buffer.h — helpers behind Communicator::allocate_shared that every host transport uses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

constexpr std::size_t kSharedAlign = 64;

// Collective: throws kInvalidArgument (on every rank, naming each rank's size) unless every rank asks
// for the same `bytes`.
void agree_shared_bytes(Communicator& comm, std::uint64_t bytes);
// `bytes` rounded up to a multiple of kSharedAlign (what a shared buffer really takes).
inline std::size_t shared_bytes_rounded(std::size_t bytes) {
  return (bytes + kSharedAlign - 1) / kSharedAlign * kSharedAlign;
}
// Zeroed, kSharedAlign-aligned heap memory of `bytes` (empty for 0).
SharedBuffer host_shared_buffer(std::size_t bytes);

}  // namespace mirror::coll::detail
