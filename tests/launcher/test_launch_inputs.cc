// test_launch_inputs.cc — mirrorrun's inputs: command-line parsing (what is mirrorrun's, what is the
// program's), hostfile checks, program and mpirun lookup.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mirror/error.h"
#include "mirror/launch/hostfile.h"
#include "mirror/launch/launch_cli.h"
#include "mirror/launch/program_lookup.h"

namespace mirror::launch {
namespace {

ParsedCommandLine parse(std::vector<std::string> args, std::string* err_text = nullptr) {
  std::ostringstream out, err;
  auto parsed = parse_launch_command_line(args, out, err);
  if (err_text) *err_text = err.str();
  return parsed;
}

TEST(LaunchCli, ProgramAndItsArgumentsAreNotParsed) {
  const auto p = parse({"-np", "3", "--max-restarts", "2", "trainer", "--np", "9", "--dry-run"});
  ASSERT_TRUE(p.run);
  EXPECT_EQ(*p.options.np, 3);
  EXPECT_EQ(p.options.max_restarts, 2);
  EXPECT_FALSE(p.options.dry_run);
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"trainer", "--np", "9", "--dry-run"}));
}

TEST(LaunchCli, DoubleDashAndSpellingsOfNp) {
  auto p = parse({"--dry-run", "--", "prog", "-x"});
  ASSERT_TRUE(p.run);
  EXPECT_TRUE(p.options.dry_run);
  EXPECT_FALSE(p.options.np);
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"prog", "-x"}));
  EXPECT_EQ(*parse({"--np=4", "prog"}).options.np, 4);
  EXPECT_EQ(*parse({"-n", "2", "prog"}).options.np, 2);
  EXPECT_EQ(*parse({"-np=5", "prog"}).options.np, 5);
  EXPECT_EQ(parse({"--hostfile", "h", "prog"}).options.hostfile, "h");
}

TEST(LaunchCli, BadValuesAreRejected) {
  std::string err;
  EXPECT_FALSE(parse({"-np", "0", "prog"}, &err).run);
  EXPECT_NE(err.find("positive"), std::string::npos) << err;
  EXPECT_FALSE(parse({"-np", "-3", "prog"}).run);
  EXPECT_FALSE(parse({"-np", "two", "prog"}).run);
  EXPECT_FALSE(parse({"--max-restarts", "-1", "prog"}).run);
  EXPECT_FALSE(parse({"--bogus", "prog"}).run);
  const auto none = parse({"-np", "2"}, &err);
  EXPECT_FALSE(none.run);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(err.find("no program"), std::string::npos) << err;
}

TEST(LaunchCli, MpiArgsAreSplitLikeAShell) {
  const auto p = parse({"--mpi-args", "--mca btl_tcp_if_include 'eth1,eth2' -x \"A=b c\"", "prog", "--mpi-args"});
  ASSERT_TRUE(p.run);
  EXPECT_EQ(p.options.mpi_args,
            (std::vector<std::string>{"--mca", "btl_tcp_if_include", "eth1,eth2", "-x", "A=b c"}));
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"prog", "--mpi-args"}));
  EXPECT_TRUE(parse({"prog"}).options.mpi_args.empty());
  std::string err;
  EXPECT_FALSE(parse({"--mpi-args", "--mca 'unterminated", "prog"}, &err).run);
  EXPECT_NE(err.find("unterminated ' quote"), std::string::npos) << err;
}

TEST(LaunchCli, TagOutputByDefaultAndOff) {
  EXPECT_TRUE(parse({"prog"}).options.tag_output);
  EXPECT_FALSE(parse({"--no-tag-output", "prog"}).options.tag_output);
}

TEST(LaunchCli, HelpExitsZero) {
  const auto p = parse({"--help"});
  EXPECT_FALSE(p.run);
  EXPECT_EQ(p.exit_code, 0);
}

TEST(Hostfile, ParsesHostsSlotsAndComments) {
  const auto hosts = parse_hostfile("# cluster\nnode1 slots=4\n\n  node2 slots=2 max_slots=8  # big\nnode3\n", "h");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_EQ(*hosts[0].slots, 4);
  EXPECT_EQ(*hosts[1].max_slots, 8);
  EXPECT_FALSE(hosts[2].slots);
  EXPECT_FALSE(total_slots(hosts));
  EXPECT_EQ(*total_slots({hosts[0], hosts[1]}), 6);
}

TEST(Hostfile, BadLinesNameTheLine) {
  for (const char* bad : {"node1 slots=0", "node1 slots=x", "node1 slots=", "node1 cores=4", "slots=4",
                          "node1 slots=4 max_slots=2"}) {
    try {
      parse_hostfile(std::string("# first\n") + bad + "\n", "hf");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFormat);
      EXPECT_NE(e.message().find("hostfile hf line 2"), std::string::npos) << e.message();
    }
  }
  EXPECT_THROW(parse_hostfile("", "hf"), Error);
  EXPECT_THROW(parse_hostfile("# only a comment\n\n", "hf"), Error);
}

TEST(Hostfile, SlotsMustBePositiveAndHostsUnique) {
  for (const char* bad : {"node1 slots=0", "node1 slots=-2"}) {
    try {
      parse_hostfile(bad, "hf");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("slots must be a positive integer (ranks on that host)"), std::string::npos)
          << e.message();
    }
  }
  try {
    parse_hostfile("node1 slots=2\nnode2 slots=2\n\nnode1 slots=1\n", "hf");
    ADD_FAILURE() << "a repeated host was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("hostfile hf line 4: host 'node1' is listed again (first on line 1)"),
              std::string::npos)
        << e.message();
  }
}

TEST(Hostfile, MissingFileAndDirectoryAreErrors) {
  EXPECT_THROW(read_hostfile("/nonexistent/hostfile"), Error);
  EXPECT_THROW(read_hostfile("/tmp"), Error);
  const auto path = std::filesystem::temp_directory_path() / ("mirror_hostfile_" + std::to_string(getpid()));
  std::ofstream(path) << "localhost slots=2\n";
  EXPECT_EQ(*total_slots(read_hostfile(path.string())), 2);
  std::filesystem::remove(path);
}

TEST(ProgramLookup, SearchesPathLikeExecvp) {
  EXPECT_EQ(find_executable("sh", std::string("/nonexistent:/bin")), "/bin/sh");
  EXPECT_FALSE(find_executable("sh", std::string("/nonexistent")));
  EXPECT_EQ(find_executable("/bin/sh", std::string("")), "/bin/sh");
  EXPECT_FALSE(find_executable("/etc/passwd", std::nullopt));  // exists, not executable
  EXPECT_FALSE(find_executable("/tmp", std::nullopt));           // a directory
  EXPECT_THROW(resolve_program("no-such-program-xyz", {{"PATH", "/bin"}}), Error);
  EXPECT_THROW(resolve_program("./no-such-program", {}), Error);
  EXPECT_THROW(resolve_program("/etc/passwd", {}), Error);
}

TEST(ProgramLookup, MpirunFromEnvironmentOrPath) {
  EXPECT_EQ(find_mpirun({{"MIRROR_MPIRUN", "/bin/sh"}, {"PATH", "/nonexistent"}}), "/bin/sh");
  EXPECT_THROW(find_mpirun({{"MIRROR_MPIRUN", "/nonexistent/mpirun"}}), Error);
  EXPECT_THROW(find_mpirun({{"PATH", "/nonexistent"}}), Error);
}

}  // namespace
}  // namespace mirror::launch
