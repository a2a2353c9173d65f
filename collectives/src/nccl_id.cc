// nccl_id.cc — broadcast_nccl_unique_id(): ncclGetUniqueId on the root, MPI_Bcast to every rank.
#include "mirror/coll/nccl_id.h"

#include <mpi.h>

#include "mirror/error.h"
#include "mpi_check.h"
#include "nccl_id_internal.h"

#ifdef MIRROR_HAVE_CUDA
#include "nccl_check.h"
#endif

namespace mirror::coll {

bool nccl_built() noexcept {
#ifdef MIRROR_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<std::uint8_t> broadcast_nccl_unique_id(int root) { return detail::broadcast_nccl_unique_id(MPI_COMM_WORLD, root); }

namespace detail {

std::vector<std::uint8_t> broadcast_nccl_unique_id(MPI_Comm comm, int root) {
#ifdef MIRROR_HAVE_CUDA
  int rank = 0, size = 1;
  MIRROR_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  MIRROR_CHECK_MPI(MPI_Comm_size(comm, &size));
  MIRROR_CHECK(root >= 0 && root < size, kInvalidArgument,
               "broadcast_nccl_unique_id: root " << root << " is out of range; expected 0.." << size - 1);
  ncclUniqueId id{};
  // The root reports a failure to the others through the broadcast itself (a flag ahead of the id), so
  // no rank is left waiting for an id that never comes.
  int ok = 1;
  std::string error;
  if (rank == root) {
    const ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc != ncclSuccess) {
      ok = 0;
      error = ncclGetErrorString(rc);
    }
  }
  MIRROR_CHECK_MPI(MPI_Bcast(&ok, 1, MPI_INT, root, comm));
  MIRROR_CHECK(ok, kNccl, "ncclGetUniqueId failed on rank " << root << (error.empty() ? "" : ": ") << error);
  MIRROR_CHECK_MPI(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, root, comm));
  const auto* p = reinterpret_cast<const std::uint8_t*>(&id);
  return std::vector<std::uint8_t>(p, p + sizeof(id));
#else
  (void)comm;
  (void)root;
  MIRROR_THROW(kInvalidArgument, "broadcast_nccl_unique_id: this build has no NCCL (configure with "
                                 "-DMIRROR_WITH_CUDA=ON on a machine with the CUDA toolkit and NCCL)");
#endif
}

}  // namespace detail
}  // namespace mirror::coll
