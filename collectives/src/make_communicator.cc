// make_communicator.cc — make_communicator(): picks the backend named in CommOptions and, for the host
// backend, the transport: shared memory when every rank is on this node (or when forced), else MPI.
#include <mpi.h>

#include "host_communicator.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"
#include "mpi_check.h"
#include "mpi_transport.h"
#include "shm_communicator.h"
#include "shm_segment.h"

#ifdef MIRROR_HAVE_CUDA
#include "nccl_communicator.h"
#endif

namespace mirror::coll {
namespace {

// Ranks of the world that share this node (MPI_COMM_TYPE_SHARED).
int ranks_on_this_node() {
  MPI_Comm node = MPI_COMM_NULL;
  MIRROR_CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int n = 0;
  MIRROR_CHECK_MPI(MPI_Comm_size(node, &n));
  MIRROR_CHECK_MPI(MPI_Comm_free(&node));
  return n;
}

// The shared-memory communicator, or nullptr (on every rank alike) with *why when it cannot be made.
std::unique_ptr<Communicator> try_shm(const CommOptions& options, std::string* why) {
  int rank = 0, size = 0, on_node = ranks_on_this_node(), all_on_node = 0;
  MIRROR_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MIRROR_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int mine = on_node == size ? 1 : 0;
  MIRROR_CHECK_MPI(MPI_Allreduce(&mine, &all_on_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!all_on_node) {
    *why = "the " + std::to_string(size) + " ranks do not all share one node (this node has " +
           std::to_string(on_node) + " of them)";
    return nullptr;
  }
  // Setup traffic on a private communicator, so it cannot match the user's messages.
  MPI_Comm comm = MPI_COMM_NULL;
  MIRROR_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  std::unique_ptr<detail::ShmSegment> segment;
  try {
    segment = detail::ShmSegment::create(comm, detail::ShmCommunicator::segment_bytes(size), why);
  } catch (...) {
    MPI_Comm_free(&comm);
    throw;
  }
  MIRROR_CHECK_MPI(MPI_Comm_free(&comm));
  if (!segment) return nullptr;
  return std::make_unique<detail::ShmCommunicator>(std::move(segment), rank, size, options);
}

std::unique_ptr<Communicator> make_mpi_host(const CommOptions& options) {
  // The progress thread calls MPI concurrently with the user's thread: only with MPI_THREAD_MULTIPLE.
  int provided = MPI_THREAD_SINGLE;
  MIRROR_CHECK_MPI(MPI_Query_thread(&provided));
  return std::make_unique<detail::HostCommunicator>(std::make_unique<detail::MpiTransport>(), options,
                                                    options.progress_thread && provided == MPI_THREAD_MULTIPLE);
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(const CommOptions& options) {
  MIRROR_CHECK(MpiRuntime::initialized(), kInvalidArgument,
               "make_communicator: MPI is not initialised; construct mirror::coll::MpiRuntime first in main()");
  switch (options.backend) {
    case Backend::kHost: {
      switch (options.host_transport) {
        case HostTransport::kMpi: return make_mpi_host(options);
        case HostTransport::kShm: {
          std::string why;
          auto comm = try_shm(options, &why);
          MIRROR_CHECK(comm != nullptr, kInvalidArgument,
                       "make_communicator: host_transport shm is not possible: " << why << "; use auto or mpi");
          return comm;
        }
        case HostTransport::kAuto: {
          std::string why;
          if (auto comm = try_shm(options, &why)) return comm;
          return make_mpi_host(options);  // agreed on every rank: try_shm fails everywhere or nowhere
        }
      }
      MIRROR_THROW(kInvalidArgument,
                   "make_communicator: unknown host_transport value " << static_cast<int>(options.host_transport));
    }
    case Backend::kNccl:
#ifdef MIRROR_HAVE_CUDA
      return detail::make_nccl_communicator(options);
#else
      MIRROR_THROW(kInvalidArgument, "make_communicator: the nccl backend is not in this build (configured "
                                     "without CUDA/NCCL, MIRROR_WITH_CUDA=OFF or no toolkit found); use the host backend");
#endif
  }
  MIRROR_THROW(kInvalidArgument, "make_communicator: unknown backend value " << static_cast<int>(options.backend));
}

const char* transport_name(const Communicator& comm) {
  if (comm.backend() == Backend::kNccl) return "nccl";
  return dynamic_cast<const detail::ShmCommunicator*>(&comm) != nullptr ? "shm" : "mpi";
}

ShmStagingCounts shm_staging_counts(const Communicator& comm) {
  ShmStagingCounts counts;
  if (const auto* shm = dynamic_cast<const detail::ShmCommunicator*>(&comm)) {
    counts.cached = shm->staging_calls(false);
    counts.streaming = shm->staging_calls(true);
    counts.direct = shm->direct_calls();
    counts.evicted = shm->evicting_calls();
  }
  return counts;
}

}  // namespace mirror::coll
