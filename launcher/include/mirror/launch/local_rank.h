// mirror/launch/local_rank.h — the one place that reads a rank's local rank (its index among the ranks on
// its machine) from the variables MPI launchers and schedulers set, and turns it into a GPU index.
//
// Read in this order (the first one set wins; launcher-specific variables before the scheduler's, because
// under `srun ... mpirun` SLURM_LOCALID describes mpirun's task, not the rank):
//   OMPI_COMM_WORLD_LOCAL_RANK  Open MPI (mpirun, and so mirrorrun)
//   MV2_COMM_WORLD_LOCAL_RANK   MVAPICH2
//   MPI_LOCALRANKID             MPICH Hydra, Intel MPI
//   PALS_LOCAL_RANKID           HPE/Cray PALS (aprun/mpiexec)
//   SLURM_LOCALID               Slurm srun (srun --mpi=pmix)
// PMIx exposes the local rank only through PMIx_Get, not the environment; under Open MPI the OMPI_
// variable is always there, so nothing is lost. The local size comes from the matching *_LOCAL_SIZE /
// MPI_LOCALNRANKS variable when the launcher sets one.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace mirror::launch {

struct LocalRank {
  int rank = 0;                 // 0-based index among the ranks on this machine
  std::optional<int> size;      // ranks on this machine, when the launcher says
  std::string source;           // the variable it came from, for messages
};

// Returns the variable's value or nullopt when unset.
using EnvGetter = std::function<std::optional<std::string>(const std::string& name)>;

// EnvGetter over the live environment (getenv), for programs that have no Environment snapshot.
EnvGetter process_env_getter();

// The local rank, or nullopt when none of the variables is set (a program started without a launcher).
// Throws mirror::Error(kInvalidArgument) when a variable is set but is not a non-negative integer.
std::optional<LocalRank> read_local_rank(const EnvGetter& getenv_fn = process_env_getter());

// The GPU a rank uses: its local rank. Throws mirror::Error(kInvalidArgument) when gpu_count is 0 or the
// local rank is >= gpu_count (more ranks on this machine than GPUs: give fewer ranks, or use -np).
int gpu_for_local_rank(const LocalRank& local, int gpu_count);

}  // namespace mirror::launch
