// mpi_requests.h — abandon_requests(): cancels and frees MPI requests that will never be waited for (after a
// timeout or a failure), so that nothing refers to their buffers any more. Private to collectives/.
#pragma once

#include <mpi.h>

#include <vector>

namespace mirror::coll::detail {

inline void abandon_requests(std::vector<MPI_Request>& requests) noexcept {
  for (auto& r : requests) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }
}

}  // namespace mirror::coll::detail
