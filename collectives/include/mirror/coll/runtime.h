// mirror/coll/runtime.h — the process's place in the job: MPI start-up and shutdown, world and local
// rank, and ending the whole job on a fatal error. The only way code outside collectives/ touches MPI.
#pragma once

#include <string>

namespace mirror::coll {

// RAII: initialises MPI (thread level MULTIPLE if available) on construction and finalises it on
// destruction. One per process, made first thing in main(). Works as a single process without mpirun.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  static int world_rank();
  static int world_size();
  // Rank among the ranks on this host, and how many there are (from a shared-memory split of the world).
  static int local_rank();
  static int local_size();
  static std::string hostname();
  static bool initialized();

  // Ends every rank of the job with `code` (MPI_Abort, after 250 ms in which the other ranks that failed in
  // the same collective can print their own error); used by main() after printing an error.
  [[noreturn]] static void abort_job(int code);
};

// Exit code agreed by all ranks: the maximum of every rank's code (a collective over the world).
int agree_exit_code(int local_code);

}  // namespace mirror::coll
