// job_process.cc — mpirun's fork/exec into its own session with piped output, and the session-wide kill,
// reap and signal operations (see job_process.h).
#include "job_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "mirror/error.h"
#include "process_table.h"

namespace mirror::launch::detail {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

StartedJob start_job(const std::vector<std::string>& argv, const sigset_t& child_mask) {
  std::vector<char*> cargv;
  for (const auto& word : argv) cargv.push_back(const_cast<char*>(word.c_str()));
  cargv.push_back(nullptr);
  int out[2], err[2];
  MIRROR_CHECK(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0, kInternal,
               "pipe() failed starting " << argv[0] << ": " << std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  MIRROR_CHECK(pid >= 0, kInternal, "fork() failed starting " << argv[0] << ": " << std::strerror(errno));
  if (pid == 0) {
    setsid();  // own session and process group: the terminal's Ctrl-C goes to mirrorrun alone
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // mirrorrun killed -> mpirun ends the job, nothing is orphaned
    if (getppid() != parent) _exit(127);
    dup2(out[1], STDOUT_FILENO);  // (dup2 clears close-on-exec on the copies)
    dup2(err[1], STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);  // mirrorrun ignores it (output_pump.h); mpirun gets the default back
    sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    execv(cargv[0], cargv.data());
    std::fprintf(stderr, "mirrorrun: error: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  return {pid, out[0], err[0]};
}

void kill_session(pid_t sid, pid_t except) {
  for (pid_t p : processes_in_session(sid)) {
    if (p != except) kill(p, SIGKILL);
  }
}

// mirrorrun is a child subreaper (see supervise), so ranks orphaned by mpirun's death become its children:
// kill what is left of the session and reap it, for up to 2 s, so no rank outlives the job.
void reap_orphans(pid_t sid) {
  const double deadline = now_s() + 2.0;
  while (true) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) continue;
    if (p < 0 && errno != EINTR) return;  // ECHILD: nothing left
    if (now_s() > deadline) return;
    kill_session(sid, 0);
    usleep(10'000);
  }
}

// Sends `sig` to the local ranks of the job mpirun `leader` runs; to mpirun itself when none is found.
void forward_to_ranks(pid_t leader, int sig) {
  int sent = 0;
  for (pid_t p : processes_in_session(leader)) {
    if (p != leader && process_has_env_var(p, "OMPI_COMM_WORLD_RANK")) {
      kill(p, sig);
      ++sent;
    }
  }
  if (sent == 0) kill(leader, sig);
}

}  // namespace mirror::launch::detail
