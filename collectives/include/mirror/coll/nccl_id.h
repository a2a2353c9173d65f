// mirror/coll/nccl_id.h — the NCCL bootstrap step that can be checked without a GPU: rank `root` makes an
// NCCL unique id (ncclGetUniqueId, which needs no GPU) and MPI_Bcast hands it to every rank.
#pragma once

#include <cstdint>
#include <vector>

namespace mirror::coll {

// True when this build has the NCCL backend (configured with MIRROR_WITH_CUDA and NCCL found).
bool nccl_built() noexcept;

// Collective over all ranks of the job (MpiRuntime must be alive): returns the NCCL unique id made on
// `root`, the same bytes (NCCL_UNIQUE_ID_BYTES, 128) on every rank. Throws kInvalidArgument in a build
// without NCCL or for a root out of range, kNccl when ncclGetUniqueId fails.
std::vector<std::uint8_t> broadcast_nccl_unique_id(int root = 0);

}  // namespace mirror::coll
