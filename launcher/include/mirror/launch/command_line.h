// mirror/launch/command_line.h — decides how many ranks to start (RankPlan) and builds the mpirun command
// line for them, the way horovodrun does. Both are pure functions of the options and the host facts, so
// each decision (ranks, binding, oversubscription, root, threads per rank, exports) is unit-tested.
#pragma once

#include <string>
#include <vector>

#include "mirror/launch/host_facts.h"
#include "mirror/launch/hostfile.h"
#include "mirror/launch/options.h"

namespace mirror::launch {

struct RankPlan {
  int ranks = 1;             // -np
  int ranks_per_node = 1;    // the most ranks one machine runs (this machine when there is no hostfile)
  int threads_per_rank = 1;  // OMP_NUM_THREADS / OPENBLAS_NUM_THREADS: max(1, cores / ranks_per_node)
  bool oversubscribe = false;// more ranks on a machine than cores (or than the hostfile's slots)
  bool on_gpus = false;      // one rank per GPU; false: CPU ranks
  std::string note;          // one line for the user (e.g. "no GPU found; 2 CPU ranks"), may be empty
};

// -np N when given; else the hostfile's total slots; else one rank per GPU; else one per core.
// Throws mirror::Error(kInvalidArgument) for N <= 0, or a hostfile without slots= and no -np.
RankPlan plan_ranks(const LaunchOptions& options, const HostFacts& facts, const std::vector<HostEntry>& hosts);

// argv for execv: mpirun, -np, [--hostfile], binding, [--oversubscribe], [--allow-run-as-root],
// --tag-output (unless --no-tag-output), TCP keepalive for the run-time (--mca oob_tcp_keepalive_*, unless OMPI_MCA_ sets them), -x exports (thread counts, MIRROR_RESTART_COUNT=restart, MIRROR_*, NCCL_*, PATH,
// LD_LIBRARY_PATH), the --mpi-args words, then the program and its arguments unchanged.
std::vector<std::string> build_mpirun_command(const std::string& mpirun, const LaunchOptions& options,
                                              const RankPlan& plan, const HostFacts& facts, int restart = 0);

// POSIX-shell quoting: words with only safe characters stay as they are, others go in single quotes.
std::string shell_quote(const std::string& word);
std::string format_command(const std::vector<std::string>& argv);

// The words of a POSIX-shell-like string (as Python's shlex.split, which horovodrun uses for --mpi-args):
// blanks separate words; single quotes keep everything literally; double quotes keep everything but \"
// and \\; a backslash outside quotes keeps the next character. Throws mirror::Error(kInvalidArgument)
// for an unterminated quote or a trailing backslash.
std::vector<std::string> split_shell_words(const std::string& text);

}  // namespace mirror::launch
