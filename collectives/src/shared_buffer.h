// shared_buffer.h — helpers behind Communicator::allocate_shared that every host transport uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

constexpr std::size_t kSharedAlign = 64;

// Collective: allgathers `bytes` into *all and throws kInvalidArgument (on every rank) unless all agree.
void agree_shared_bytes(Communicator& comm, std::uint64_t bytes, std::vector<std::uint64_t>* all);
// Zeroed, kSharedAlign-aligned heap memory of `bytes` (empty for 0).
SharedBuffer host_shared_buffer(std::size_t bytes);

}  // namespace mirror::coll::detail
