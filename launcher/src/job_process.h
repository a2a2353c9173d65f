// job_process.h — (private) the processes of one job: mpirun started in its own session with its output on
// pipes, and the session-wide operations the supervisor needs (signal the local ranks, kill and reap
// everything left). mirrorrun is a child subreaper (supervise), so ranks orphaned by mpirun come back to it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace mirror::launch::detail {

struct StartedJob {  // mpirun, and the read ends of its stdout and stderr
  pid_t pid = -1;
  int stdout_pipe = -1;
  int stderr_pipe = -1;
};

// fork + execv of argv in a new session, stdout/stderr on pipes, SIGTERM when mirrorrun dies, child_mask
// as its signal mask. Throws mirror::Error(kInternal) when pipe() or fork() fails.
StartedJob start_job(const std::vector<std::string>& argv, const sigset_t& child_mask);

// SIGKILL to every process of session `sid` except `except` (0: none).
void kill_session(pid_t sid, pid_t except);

// Kills what is left of the session and reaps mirrorrun's children, for up to 2 s.
void reap_orphans(pid_t sid);

// Sends `sig` to the local ranks of the job mpirun `leader` runs (processes of its session that carry
// OMPI_COMM_WORLD_RANK); to mpirun itself when there are none yet.
void forward_to_ranks(pid_t leader, int sig);

}  // namespace mirror::launch::detail
