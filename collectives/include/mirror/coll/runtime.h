// mirror/coll/runtime.h — the process's place in the job: MPI start-up and shutdown, world and local
// rank, and ending the whole job on a fatal error. The only way code outside collectives/ touches MPI.
#pragma once

#include <string>
#include <vector>

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

  // The job's hosts, found when the runtime was made (the shared-memory split of the world, as the
  // backends' topology; names from MPI_Get_processor_name), in the order of their lowest world rank.
  struct Host {
    std::string name;
    std::vector<int> ranks;  // world ranks, ascending
  };
  static const std::vector<Host>& hosts();
  // One line for banners: "4 ranks on 2 hosts (2 per host: a, b)", "3 ranks on 2 hosts (a: 2, b: 1)",
  // "2 ranks on 1 host (vm)".
  static std::string hosts_summary();

  // Ends every rank of the job with `code` (MPI_Abort, after 250 ms in which the other ranks that failed in
  // the same collective can print their own error); used by main() after printing an error.
  [[noreturn]] static void abort_job(int code);
};

// Exit code agreed by all ranks: the maximum of every rank's code (a collective over the world).
int agree_exit_code(int local_code);

}  // namespace mirror::coll
