// mirror/launch/supervisor.h — runs the mpirun job and watches it: mpirun in its own session (so it and
// its ranks can be signalled and cleaned up as a group), SIGINT/SIGTERM passed on to the ranks so they can
// checkpoint, escalation to SIGKILL after a grace period or a second signal, mpirun's output copied with short
// rank tags (rank_output.h), mpirun killed when it does not end the job after a rank's fatal error
// (--failure-grace), the job's exit code passed through, and whole-job restarts after a failure.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace mirror::launch {

struct SupervisorOptions {
  int max_restarts = 0;          // restarts allowed after failures (not after a user's signal)
  double grace_period_s = 30.0;  // after the first SIGINT/SIGTERM: time before everything is killed
  double failure_grace_s = 5.0;  // after a rank's fatal error (reports_fatal_error): time mpirun gets to end
                                 // the job before mirrorrun kills it and what it started (exit code 1)
  double restart_delay_s = 1.0;  // pause before a restart (a signal during it stops the job)
  bool verbose = false;          // print each attempt's command line
};

// How one attempt ended.
struct JobOutcome {
  int exit_code = 0;        // mpirun's exit status, or 128 + signal when mpirun itself died of a signal
  int term_signal = 0;      // the signal that ended mpirun, 0 when it exited
  int interrupt_signal = 0; // SIGINT/SIGTERM the user sent mirrorrun during the attempt, 0 when none
  bool ended_after_failure = false;  // mirrorrun killed mpirun --failure-grace s after a rank's fatal error
  bool succeeded() const { return exit_code == 0 && interrupt_signal == 0; }
  std::string describe() const;  // "exit code 3", "killed by signal 9 (Killed)", "interrupted by SIGTERM"
};

struct SupervisionResult {
  int exit_code = 0;  // the job's: mpirun's code, 128 + signal for a signal death or a user's interrupt
  int restarts = 0;   // attempts after the first
};

// Starts attempt 0, 1, ... with command_for_attempt(attempt) (argv[0] an executable path), restarting after
// a failure up to max_restarts times — except after exit code 5 (mirror::exit_code::kNonFinite: the training
// diverged, and a restart would only repeat it). Lines for the user go to `log`. Installs no handlers for good: the
// signals are blocked only while it runs. Throws mirror::Error(kInternal) when fork() fails.
SupervisionResult supervise(const std::function<std::vector<std::string>(int attempt)>& command_for_attempt,
                            const SupervisorOptions& options, std::ostream& log);

}  // namespace mirror::launch
