// nccl_communicator.h — the nccl backend (device buffers). Its table row is in every build (nccl_backend.cc);
// the communicator (nccl_communicator.cc) only with MIRROR_HAVE_CUDA. make_nccl_communicator() bootstraps
// over MPI: every rank checks it sees a GPU (agreed by all ranks), picks its device, rank 0 makes the unique
// id, MPI_Bcast shares it, ncclCommInitRank joins.
#pragma once

#include <memory>

#include "backend_table.h"
#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

// The table row (backends.cc).
const BackendRow& nccl_backend();

std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& options);

}  // namespace mirror::coll::detail
