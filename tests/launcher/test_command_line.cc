// test_command_line.cc — the rank plan and the mpirun command line for given N, cores, root or not,
// GPUs and hostfile; expected words written out by hand from the rules in command_line.h.
#include <gtest/gtest.h>

#include <algorithm>

#include "mirror/error.h"
#include "mirror/launch/command_line.h"

namespace mirror::launch {
namespace {

HostFacts facts(int cores, bool root, int gpus, Environment env = {}) {
  HostFacts f;
  f.cores = cores;
  f.is_root = root;
  f.gpus = gpus;
  f.env = std::move(env);
  return f;
}

LaunchOptions options(std::optional<int> np, std::vector<std::string> command = {"prog", "--flag", "a b"}) {
  LaunchOptions o;
  o.np = np;
  o.command = std::move(command);
  return o;
}

bool contains(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end();
}
bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

TEST(PlanRanks, DefaultsToOneRankPerGpu) {
  const RankPlan plan = plan_ranks(options(std::nullopt), facts(16, false, 8), {});
  EXPECT_EQ(plan.ranks, 8);
  EXPECT_TRUE(plan.on_gpus);
  EXPECT_FALSE(plan.oversubscribe);
  EXPECT_EQ(plan.threads_per_rank, 2);
  EXPECT_TRUE(plan.note.empty());
}

TEST(PlanRanks, WithoutGpusOneCpuRankPerCoreAndSaysSo) {
  const RankPlan plan = plan_ranks(options(std::nullopt), facts(6, false, 0), {});
  EXPECT_EQ(plan.ranks, 6);
  EXPECT_FALSE(plan.on_gpus);
  EXPECT_EQ(plan.threads_per_rank, 1);
  EXPECT_NE(plan.note.find("no GPU"), std::string::npos);
}

TEST(PlanRanks, ExplicitNpWinsAndRejectsNonPositive) {
  EXPECT_EQ(plan_ranks(options(3), facts(2, false, 8), {}).ranks, 3);
  EXPECT_THROW(plan_ranks(options(0), facts(2, false, 0), {}), Error);
  EXPECT_THROW(plan_ranks(options(-2), facts(2, false, 0), {}), Error);
}

TEST(PlanRanks, MoreRanksThanGpusIsNoted) {
  const RankPlan plan = plan_ranks(options(4), facts(32, false, 2), {});
  EXPECT_NE(plan.note.find("4 ranks but 2 GPU"), std::string::npos);
}

TEST(PlanRanks, HostfileSlotsGiveTheRankCount) {
  const std::vector<HostEntry> hosts = {{"a", 4, std::nullopt}, {"b", 4, std::nullopt}};
  LaunchOptions o = options(std::nullopt);
  o.hostfile = "hosts";
  const RankPlan plan = plan_ranks(o, facts(16, false, 4), hosts);
  EXPECT_EQ(plan.ranks, 8);
  EXPECT_EQ(plan.ranks_per_node, 4);
  EXPECT_EQ(plan.threads_per_rank, 4);
  EXPECT_FALSE(plan.oversubscribe);
  // A hostfile without slots= needs -np.
  EXPECT_THROW(plan_ranks(o, facts(16, false, 4), {{"a", std::nullopt, std::nullopt}}), Error);
  // More ranks than slots oversubscribes.
  EXPECT_TRUE(plan_ranks(options(9), facts(16, false, 4), hosts).oversubscribe);
}

TEST(BuildCommand, NonRootWithFewerRanksThanCoresBindsToCores) {
  const LaunchOptions o = options(2);
  const HostFacts f = facts(8, false, 0);
  const auto argv = build_mpirun_command("/usr/bin/mpirun", o, plan_ranks(o, f, {}), f);
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[0], "/usr/bin/mpirun");
  EXPECT_EQ(argv[1], "-np");
  EXPECT_EQ(argv[2], "2");
  EXPECT_TRUE(contains(argv, {"--bind-to", "core"}));
  EXPECT_TRUE(contains(argv, {"--map-by", "slot:PE=4"}));
  EXPECT_FALSE(has(argv, "--oversubscribe"));
  EXPECT_FALSE(has(argv, "--allow-run-as-root"));
  EXPECT_TRUE(has(argv, "--tag-output"));
  EXPECT_TRUE(contains(argv, {"-x", "OMP_NUM_THREADS=4"}));
  EXPECT_TRUE(contains(argv, {"-x", "OPENBLAS_NUM_THREADS=4"}));
  EXPECT_TRUE(contains(argv, {"-x", "MIRROR_RESTART_COUNT=0"}));
  // The program and its arguments come last, untouched.
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()), (std::vector<std::string>{"prog", "--flag", "a b"}));
}

TEST(BuildCommand, RootAddsAllowRunAsRoot) {
  const LaunchOptions o = options(1);
  const HostFacts f = facts(4, true, 0);
  EXPECT_TRUE(has(build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f), "--allow-run-as-root"));
}

TEST(BuildCommand, MoreRanksThanCoresOversubscribesUnbound) {
  const LaunchOptions o = options(3);
  const HostFacts f = facts(2, false, 0);
  const auto argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f);
  EXPECT_TRUE(contains(argv, {"--bind-to", "none", "--oversubscribe"}));
  EXPECT_FALSE(has(argv, "--map-by"));
  EXPECT_TRUE(contains(argv, {"-x", "OMP_NUM_THREADS=1"}));
}

TEST(BuildCommand, RanksEqualCoresOneThreadEachNoMapBy) {
  const LaunchOptions o = options(4);
  const HostFacts f = facts(4, false, 0);
  const auto argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f);
  EXPECT_TRUE(contains(argv, {"--bind-to", "core"}));
  EXPECT_FALSE(has(argv, "--oversubscribe"));
  EXPECT_FALSE(has(argv, "--map-by"));
  EXPECT_TRUE(contains(argv, {"-x", "OPENBLAS_NUM_THREADS=1"}));
}

TEST(BuildCommand, HostfilePassedThroughAndThreadsPerNode) {
  LaunchOptions o = options(std::nullopt);
  o.hostfile = "/etc/hosts.mpi";
  const HostFacts f = facts(8, false, 2);
  const std::vector<HostEntry> hosts = {{"n1", 2, std::nullopt}, {"n2", 2, std::nullopt}};
  const auto argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, hosts), f);
  EXPECT_TRUE(contains(argv, {"-np", "4", "--hostfile", "/etc/hosts.mpi"}));
  EXPECT_TRUE(contains(argv, {"-x", "OMP_NUM_THREADS=4"}));  // 8 cores / 2 ranks per node
}

TEST(BuildCommand, ExportsMirrorNcclAndUserThreadSettingsByName) {
  const Environment env = {{"MIRROR_TIMEOUT", "5"}, {"NCCL_DEBUG", "INFO"}, {"OMP_NUM_THREADS", "3"},
                           {"PATH", "/bin"}, {"HOME", "/root"}, {"MIRROR_RESTART_COUNT", "7"}};
  const LaunchOptions o = options(2);
  const HostFacts f = facts(8, false, 0, env);
  const auto argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f, 2);
  EXPECT_TRUE(contains(argv, {"-x", "MIRROR_TIMEOUT"}));
  EXPECT_TRUE(contains(argv, {"-x", "NCCL_DEBUG"}));
  EXPECT_TRUE(contains(argv, {"-x", "PATH"}));
  EXPECT_TRUE(contains(argv, {"-x", "OMP_NUM_THREADS"}));        // the user's value, by name
  EXPECT_TRUE(contains(argv, {"-x", "OPENBLAS_NUM_THREADS=4"}));
  EXPECT_TRUE(contains(argv, {"-x", "MIRROR_RESTART_COUNT=2"}));  // the attempt, not the inherited value
  EXPECT_FALSE(contains(argv, {"-x", "MIRROR_RESTART_COUNT"}));
  EXPECT_FALSE(has(argv, "HOME"));
}

TEST(BuildCommand, MpiArgsGoJustBeforeTheProgram) {
  LaunchOptions o = options(2);
  o.mpi_args = {"--mca", "btl_tcp_if_include", "10.0.0.0/8"};
  const HostFacts f = facts(8, false, 0);
  const auto argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f);
  EXPECT_TRUE(contains(argv, {"--mca", "btl_tcp_if_include", "10.0.0.0/8", "prog", "--flag", "a b"}));
  EXPECT_EQ(argv.back(), "a b");
}

TEST(BuildCommand, NoTagOutputDropsTheTagging) {
  LaunchOptions o = options(2);
  o.tag_output = false;
  const HostFacts f = facts(8, false, 0);
  EXPECT_FALSE(has(build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f), "--tag-output"));
}

TEST(BuildCommand, KeepaliveForTheRunTimeUnlessTheUserSetsIt) {
  const LaunchOptions o = options(2);
  HostFacts f = facts(8, false, 0);
  auto argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f);
  EXPECT_TRUE(contains(argv, {"--mca", "oob_tcp_keepalive_time", "20"}));
  EXPECT_TRUE(contains(argv, {"--mca", "oob_tcp_keepalive_intvl", "5"}));
  EXPECT_TRUE(contains(argv, {"--mca", "oob_tcp_keepalive_probes", "3"}));
  f.env["OMPI_MCA_oob_tcp_keepalive_time"] = "600";  // mpirun reads it itself; the command line would win
  argv = build_mpirun_command("mpirun", o, plan_ranks(o, f, {}), f);
  EXPECT_FALSE(has(argv, "oob_tcp_keepalive_time"));
  EXPECT_TRUE(has(argv, "oob_tcp_keepalive_intvl"));
}

TEST(SplitShellWords, QuotesAndEscapesAsAShell) {
  using Words = std::vector<std::string>;
  EXPECT_EQ(split_shell_words(""), Words{});
  EXPECT_EQ(split_shell_words("  \t "), Words{});
  EXPECT_EQ(split_shell_words("-x  A=1\t--mca b c"), (Words{"-x", "A=1", "--mca", "b", "c"}));
  EXPECT_EQ(split_shell_words("'a b' \"c d\" e\\ f"), (Words{"a b", "c d", "e f"}));
  EXPECT_EQ(split_shell_words("'' x\"\""), (Words{"", "x"}));                 // empty quotes are a word
  EXPECT_EQ(split_shell_words("\"say \\\"hi\\\"\" 'it\\'"), (Words{"say \"hi\"", "it\\"}));
  EXPECT_EQ(split_shell_words("pre'mid dle'post"), (Words{"premid dlepost"}));
  EXPECT_THROW(split_shell_words("'open"), Error);
  EXPECT_THROW(split_shell_words("\"open"), Error);
  EXPECT_THROW(split_shell_words("trailing\\"), Error);
}

TEST(ShellQuote, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_quote("slot:PE=2"), "slot:PE=2");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(format_command({"mpirun", "-np", "2", "x y"}), "mpirun -np 2 'x y'");
}

}  // namespace
}  // namespace mirror::launch
