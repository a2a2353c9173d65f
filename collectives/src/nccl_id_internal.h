// nccl_id_internal.h — broadcast_nccl_unique_id over a given MPI communicator (the NCCL backend's own dup).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace mirror::coll::detail {
std::vector<std::uint8_t> broadcast_nccl_unique_id(MPI_Comm comm, int root);
}  // namespace mirror::coll::detail
