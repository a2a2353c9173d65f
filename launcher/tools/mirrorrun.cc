// mirrorrun.cc — main(): parse the command line, check every input before anything starts (mpirun, the
// program, the hostfile, CUDA_VISIBLE_DEVICES), plan the ranks, then print (--dry-run) or supervise mpirun.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "mirror/error.h"
#include "mirror/launch/command_line.h"
#include "mirror/launch/host_facts.h"
#include "mirror/launch/hostfile.h"
#include "mirror/launch/launch_cli.h"
#include "mirror/launch/program_lookup.h"
#include "mirror/launch/supervisor.h"

int main(int argc, char** argv) {
  using namespace mirror::launch;
  const ParsedCommandLine parsed =
      parse_launch_command_line(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  if (!parsed.run) return parsed.exit_code;
  const LaunchOptions& options = parsed.options;
  try {
    // Open MPI gives every rank a pseudo-terminal, so a rank cannot tell whether the job's output goes to a
    // terminal; tell it (forwarded with the other MIRROR_* variables; the trainer draws its bar only then).
    ::setenv("MIRROR_STDOUT_IS_TTY", ::isatty(STDOUT_FILENO) ? "1" : "0", /*overwrite=*/0);
    const HostFacts facts = gather_host_facts();
    const std::string mpirun = find_mpirun(facts.env);
    resolve_program(options.command.front(), facts.env);  // exists and is executable, or a clear error
    const std::vector<HostEntry> hosts = options.hostfile.empty() ? std::vector<HostEntry>{}
                                                                  : read_hostfile(options.hostfile);
    const RankPlan plan = plan_ranks(options, facts, hosts);
    if (!plan.note.empty()) std::cerr << "mirrorrun: " << plan.note << "\n";
    if (options.verbose) {
      std::cerr << "mirrorrun: " << plan.ranks << " rank(s) on " << (plan.on_gpus ? "GPUs" : "CPUs") << ", "
                << facts.cores << " core(s), " << facts.gpus << " GPU(s), " << plan.threads_per_rank
                << " thread(s) per rank" << (hosts.empty() ? "" : ", hostfile " + options.hostfile) << "\n";
    }
    if (options.dry_run) {
      std::cout << format_command(build_mpirun_command(mpirun, options, plan, facts)) << std::endl;
      return 0;
    }
    SupervisorOptions supervision;
    supervision.max_restarts = options.max_restarts;
    supervision.grace_period_s = options.grace_period_s;
    supervision.restart_delay_s = options.restart_delay_s;
    supervision.failure_grace_s = options.failure_grace_s;
    supervision.verbose = options.verbose;
    const SupervisionResult result = supervise(
        [&](int attempt) { return build_mpirun_command(mpirun, options, plan, facts, attempt); }, supervision,
        std::cerr);
    return result.exit_code;
  } catch (const mirror::Error& e) {
    std::cerr << "mirrorrun: error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mirrorrun: error: " << e.what() << "\n";
    return 2;
  }
}
