// mpi_main.h — the one place where Mirror's MPI programs (trainer, mirror-eval) catch errors: runs the
// program body inside an MpiRuntime; an exception prints "[rank r] error: ..." and ends every rank of the job
// (MPI_Abort) with a non-zero code, so no rank is left waiting for one that failed.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>

#include "mirror/coll/runtime.h"
#include "mirror/error.h"

namespace mirror::tools {

inline int run_mpi_main(int argc, char** argv, const std::function<int(int& argc, char**& argv, int rank)>& body) {
  int rank = 0;
  try {
    coll::MpiRuntime runtime(&argc, &argv);
    rank = coll::MpiRuntime::world_rank();
    try {
      return body(argc, argv, rank);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[rank %d] error: %s\n", rank, e.what());
      coll::MpiRuntime::abort_job(1);
    }
  } catch (const std::exception& e) {  // MPI itself could not start
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace mirror::tools
