// mpi_main.h — the one place where Mirror's MPI programs (trainer, mirror-eval) catch errors: runs the
// program body inside an MpiRuntime. An AgreedError (every rank raised it at the same point, having checked
// with the others: mirror/agreed_error.h) is printed once by rank 0 as "error: ..." and every rank ends MPI
// normally with its exit code. Any other exception prints "[rank r] error: ..." and ends every rank of the job
// (MPI_Abort, exit code 1), so no rank is left waiting for one that failed.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>

#include "mirror/coll/runtime.h"
#include "mirror/agreed_error.h"
#include "mirror/error.h"

namespace mirror::tools {

inline int run_mpi_main(int argc, char** argv, const std::function<int(int& argc, char**& argv, int rank)>& body) {
  int rank = 0;
  try {
    coll::MpiRuntime runtime(&argc, &argv);
    rank = coll::MpiRuntime::world_rank();
    try {
      return body(argc, argv, rank);
    } catch (const AgreedError& e) {
      if (rank == 0) std::fprintf(stderr, "error: %s\n", e.what());
      return e.exit_code();  // ~MpiRuntime: MPI_Finalize on every rank
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[rank %d] error: %s\n", rank, e.what());
      coll::MpiRuntime::abort_job(exit_code::kFailure);
    }
  } catch (const std::exception& e) {  // MPI itself could not start
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace mirror::tools
