// mirror/launch/options.h — LaunchOptions: everything mirrorrun was asked to do, built once from its command
// line (see launch_cli.h) and read by the planner, the command-line builder and the supervisor.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mirror::launch {

struct LaunchOptions {
  std::optional<int> np;          // -np N; unset: one rank per local GPU (CPU ranks = cores without a GPU)
  std::string hostfile;           // --hostfile F (Open MPI syntax "host slots=N"); empty: this machine only
  int max_restarts = 0;           // --max-restarts K: start a failed job again up to K times
  bool dry_run = false;           // --dry-run: print the mpirun command line and exit 0
  bool verbose = false;           // --verbose: print the plan and the command line before running
  bool tag_output = true;         // false with --no-tag-output: no rank tags (Open MPI 4.1's tagging drops
                                  // output when a rank writes many short lines fast; see docs/launcher.md)
  double grace_period_s = 30.0;   // --grace-period S: after SIGINT/SIGTERM, time ranks get before SIGKILL
  double restart_delay_s = 1.0;   // --restart-delay S: pause between a failure and the next attempt
  double failure_grace_s = 5.0;   // --failure-grace S: after a rank's fatal error, time mpirun gets to end the job
  std::vector<std::string> mpi_args;  // --mpi-args "...": extra mpirun words (shell-split), before the program
  std::vector<std::string> command;  // PROGRAM and its arguments, passed through untouched
};

}  // namespace mirror::launch
