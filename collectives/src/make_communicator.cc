// make_communicator.cc — make_communicator(): picks the backend named in CommOptions.
#include <mpi.h>

#include "host_communicator.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"
#include "mpi_check.h"
#include "mpi_transport.h"

#ifdef MIRROR_HAVE_CUDA
#include "nccl_communicator.h"
#endif

namespace mirror::coll {

std::unique_ptr<Communicator> make_communicator(const CommOptions& options) {
  MIRROR_CHECK(MpiRuntime::initialized(), kInvalidArgument,
               "make_communicator: MPI is not initialised; construct mirror::coll::MpiRuntime first in main()");
  switch (options.backend) {
    case Backend::kHost: {
      // The progress thread calls MPI concurrently with the user's thread: only with MPI_THREAD_MULTIPLE.
      int provided = MPI_THREAD_SINGLE;
      MIRROR_CHECK_MPI(MPI_Query_thread(&provided));
      return std::make_unique<detail::HostCommunicator>(std::make_unique<detail::MpiTransport>(), options,
                                                        options.progress_thread && provided == MPI_THREAD_MULTIPLE);
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

}  // namespace mirror::coll
