// nccl_communicator.h — the NCCL backend (device buffers), built only with MIRROR_HAVE_CUDA.
// make_nccl_communicator() bootstraps over MPI: every rank checks it sees a GPU (agreed by all ranks),
// picks its device, rank 0 makes the unique id, MPI_Bcast shares it, ncclCommInitRank joins.
#pragma once

#include <memory>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& options);

}  // namespace mirror::coll::detail
