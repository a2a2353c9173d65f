// supervisor.cc — the signal loop of one attempt (forward, grace, escalate, the failure grace after a rank's
// fatal error), exit-code translation and the restart loop. Processes: job_process.h; output: output_pump.h.
//
// Why the ranks are signalled directly: on SIGINT/SIGTERM Open MPI's mpirun kills its ranks with SIGTERM
// and SIGKILL one second later (odls_base_sigkill_timeout), too soon to write a checkpoint, and raising
// that timeout delays every failing job by as much. So the first signal goes straight to the local ranks
// (processes of mpirun's session that carry OMPI_COMM_WORLD_RANK), mpirun is left alone while they stop,
// and only after the grace period (or a second signal) is mpirun told to end the job.
#include "mirror/launch/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "mirror/agreed_error.h"
#include "mirror/error.h"
#include "mirror/launch/command_line.h"
#include "job_process.h"
#include "output_pump.h"

namespace mirror::launch {
namespace {

constexpr double kKillAfterTermS = 5.0;  // mpirun gets this long after SIGTERM before SIGKILL of the session
constexpr double kRepeatWindowS = 1.0;   // a signal this soon after the first is the same request, delivered
                                         // twice (e.g. to mirrorrun and to its process group by a wrapper)
constexpr long kPollNs = 100'000'000;   // the loop wakes at least every 0.1 s
constexpr double kOutputDrainS = 2.0;    // after the job: time for the last output to arrive

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    default: return "signal " + std::to_string(sig);
  }
}

// Blocks the signals the supervisor waits for (sigtimedwait), and restores the old mask on scope exit.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set_, sig);
    sigprocmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() {
    // Drop signals that arrived after the job ended, so they do not hit mirrorrun on unblocking.
    timespec zero{0, 0};
    while (sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  const sigset_t& set() const { return set_; }
  const sigset_t& old() const { return old_; }

  // Waits up to `seconds` for one of the signals; returns it, or 0 on timeout.
  int wait(double seconds) const {
    timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
    const int sig = sigtimedwait(&set_, nullptr, &ts);
    return sig > 0 ? sig : 0;
  }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

bool is_stop_signal(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

// One attempt: mpirun running, the signal loop, and the ways mirrorrun ends it (grace periods, escalation).
class Attempt {
 public:
  Attempt(const std::vector<std::string>& argv, const SupervisorOptions& options, const BlockedSignals& signals,
          std::ostream& log)
      : options_(options), log_(log), job_(detail::start_job(argv, signals.old())),
        // mpirun's output, rank tags shortened (rank_output.h), watched for a rank's fatal error.
        output_(job_.stdout_pipe, job_.stderr_pipe, STDOUT_FILENO, STDERR_FILENO) {}

  JobOutcome run(const BlockedSignals& signals) {
    while (true) {
      on_signal(signals.wait(kPollNs / 1e9));
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(job_.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == job_.pid) {
        return collect();
      }
      escalate(now_s());
    }
  }

 private:
  void on_signal(int sig) {
    if (!is_stop_signal(sig)) return;
    if (outcome_.interrupt_signal == 0) {
      outcome_.interrupt_signal = sig;
      first_signal_at_ = now_s();
      log_ << "mirrorrun: got " << signal_name(sig) << "; passing it to the ranks (they have "
           << options_.grace_period_s << " s to stop; a second signal kills them now)" << std::endl;
      detail::forward_to_ranks(job_.pid, sig);
    } else if (!killed_ && now_s() - first_signal_at_ >= kRepeatWindowS) {
      log_ << "mirrorrun: got " << signal_name(sig) << " again; killing the job" << std::endl;
      kill_job();
    }
  }

  // Grace periods over: SIGTERM to mpirun (it ends the job on every machine it can reach), then SIGKILL.
  void escalate(double now) {
    if (killed_) return;
    if (!term_sent_ && outcome_.interrupt_signal && now - first_signal_at_ >= options_.grace_period_s) {
      log_ << "mirrorrun: grace period of " << options_.grace_period_s << " s is over; stopping mpirun" << std::endl;
      stop_mpirun(now);
    }
    // A rank failed and mpirun is still there: it is already aborting the job (a SIGTERM would only make it
    // say so, or crash) and waits for a host it cannot reach. End it and everything it started here.
    const double failed_at = output_.failure_seen_at();
    if (!outcome_.interrupt_signal && failed_at != 0 && now - failed_at >= options_.failure_grace_s) {
      log_ << "mirrorrun: a rank reported a fatal error " << options_.failure_grace_s
           << " s ago and mpirun has not ended the job (a host may be unreachable); killing mpirun. The error: "
           << output_.failure_line() << std::endl;
      outcome_.ended_after_failure = true;
      kill_job();
      return;
    }
    if (term_sent_ && now - term_sent_at_ >= kKillAfterTermS) {
      log_ << "mirrorrun: mpirun did not stop; killing the job" << std::endl;
      kill_job();
    }
  }

  void stop_mpirun(double now) {
    kill(job_.pid, SIGTERM);
    term_sent_ = true;
    term_sent_at_ = now;
  }

  void kill_job() {
    detail::kill_session(job_.pid, 0);
    killed_ = true;
  }

  JobOutcome collect() {
    detail::kill_session(job_.pid, job_.pid);  // the zombie still holds the session id: nothing new can take it
    int status = 0;
    while (waitpid(job_.pid, &status, 0) < 0 && errno == EINTR) {
    }
    detail::reap_orphans(job_.pid);
    output_.finish(kOutputDrainS);
    if (WIFSIGNALED(status)) {
      outcome_.term_signal = WTERMSIG(status);
      outcome_.exit_code = 128 + outcome_.term_signal;
    } else {
      outcome_.exit_code = WEXITSTATUS(status);
    }
    if (outcome_.ended_after_failure) {  // the job's own code never came; a rank did fail
      outcome_.term_signal = 0;
      outcome_.exit_code = 1;
    }
    return outcome_;
  }

  const SupervisorOptions& options_;
  std::ostream& log_;
  const detail::StartedJob job_;
  detail::OutputPump output_;
  JobOutcome outcome_;
  double first_signal_at_ = 0, term_sent_at_ = 0;
  bool term_sent_ = false, killed_ = false;
};

}  // namespace

std::string JobOutcome::describe() const {
  std::string text;
  if (term_signal) {
    text = "mpirun killed by " + signal_name(term_signal) + " (" + strsignal(term_signal) + ")";
  } else if (exit_code > 128 && exit_code < 128 + 65) {
    text = "exit code " + std::to_string(exit_code) + " (a rank died of " + signal_name(exit_code - 128) + ": " +
           strsignal(exit_code - 128) + ")";
  } else {
    text = "exit code " + std::to_string(exit_code);
  }
  if (interrupt_signal) text = "stopped by " + signal_name(interrupt_signal) + ", " + text;
  if (ended_after_failure) text = "a rank failed and mpirun did not end the job; mirrorrun killed it (exit code 1)";
  return text;
}

SupervisionResult supervise(const std::function<std::vector<std::string>(int attempt)>& command_for_attempt,
                            const SupervisorOptions& options, std::ostream& log) {
  SupervisionResult result;
  BlockedSignals signals;
  // A closed output (`mirrorrun ... | head`) must not kill mirrorrun while it still supervises the job.
  struct sigaction ignore_pipe {}, old_pipe {};
  ignore_pipe.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore_pipe, &old_pipe);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // ranks orphaned by a dying mpirun come to mirrorrun, not to init
  for (int attempt = 0;; ++attempt) {
    const std::vector<std::string> argv = command_for_attempt(attempt);
    if (options.verbose) log << "mirrorrun: attempt " << attempt << ": " << format_command(argv) << std::endl;
    const JobOutcome outcome = Attempt(argv, options, signals, log).run(signals);
    if (outcome.interrupt_signal) {
      result.exit_code = 128 + outcome.interrupt_signal;
      log << "mirrorrun: job " << outcome.describe() << "; exiting with " << result.exit_code << std::endl;
      break;
    }
    result.exit_code = outcome.exit_code;
    if (outcome.succeeded()) break;
    if (!outcome.term_signal && outcome.exit_code == exit_code::kNonFinite && options.max_restarts > 0) {
      // A diverged run (the trainer's exit code for a NaN/Inf loss or gradient) would only diverge again.
      log << "mirrorrun: job failed (" << outcome.describe() << ": training diverged); not restarted" << std::endl;
      break;
    }
    if (attempt >= options.max_restarts) {
      if (options.max_restarts > 0) {
        log << "mirrorrun: job failed (" << outcome.describe() << "); no restarts left" << std::endl;
      }
      break;
    }
    log << "mirrorrun: job failed (" << outcome.describe() << "); restart " << attempt + 1 << " of "
        << options.max_restarts << std::endl;
    const double until = now_s() + options.restart_delay_s;
    int sig = 0;
    while (!sig && now_s() < until) {
      const int got = signals.wait(std::min(kPollNs / 1e9, std::max(0.0, until - now_s())));
      if (is_stop_signal(got)) sig = got;
    }
    if (sig) {
      result.exit_code = 128 + sig;
      log << "mirrorrun: got " << signal_name(sig) << " before the restart; exiting with " << result.exit_code
          << std::endl;
      break;
    }
    ++result.restarts;
  }
  if (options.max_restarts > 0) {
    log << "mirrorrun: " << result.restarts << " restart(s); job exit code " << result.exit_code << std::endl;
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  return result;
}

}  // namespace mirror::launch
