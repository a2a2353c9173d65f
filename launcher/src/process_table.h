// process_table.h — (private) reads /proc to find the processes of a session (mpirun runs in its own
// session, with its local ranks) and whether a process is an MPI rank, for signalling and cleanup.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mirror::launch::detail {

// Processes whose session id is `sid` (including the leader when alive, zombies excluded).
std::vector<pid_t> processes_in_session(pid_t sid);

// True when /proc/PID/environ holds `name`= (an Open MPI rank and its children carry
// OMPI_COMM_WORLD_RANK). False when it cannot be read.
bool process_has_env_var(pid_t pid, const std::string& name);

}  // namespace mirror::launch::detail
