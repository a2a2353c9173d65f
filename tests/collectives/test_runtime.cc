// test_runtime.cc — MpiRuntime: world/local ranks agree with a count made by every rank; the job's hosts
// agree with Open MPI's launcher (OMPI_COMM_WORLD_LOCAL_*) and this machine's own name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "mirror/coll/runtime.h"

using mirror::coll::MpiRuntime;

TEST(Runtime, RanksAreInRange) {
  EXPECT_GE(MpiRuntime::world_rank(), 0);
  EXPECT_LT(MpiRuntime::world_rank(), MpiRuntime::world_size());
  EXPECT_GE(MpiRuntime::local_rank(), 0);
  EXPECT_LT(MpiRuntime::local_rank(), MpiRuntime::local_size());
  // The ranks on this machine as MPI counts them (shared-memory split) are those Open MPI's launcher placed
  // here: all of them on one machine, 2 of 4 on each host of the test cluster (tests/cluster).
  if (const char* size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    EXPECT_EQ(MpiRuntime::local_size(), std::atoi(size));
    EXPECT_EQ(MpiRuntime::local_rank(), std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
  }
}

TEST(Runtime, AgreedExitCodeIsTheMaximum) {
  // Each rank offers its rank number; the agreed code is the largest, world_size - 1.
  EXPECT_EQ(mirror::coll::agree_exit_code(MpiRuntime::world_rank()), MpiRuntime::world_size() - 1);
}

TEST(Runtime, HostsPartitionTheWorldAndNameThisOne) {
  const auto& hosts = MpiRuntime::hosts();
  std::vector<int> seen(static_cast<std::size_t>(MpiRuntime::world_size()), 0);
  const MpiRuntime::Host* mine = nullptr;
  for (const auto& h : hosts) {
    ASSERT_FALSE(h.ranks.empty()) << h.name;
    for (int r : h.ranks) {
      ASSERT_GE(r, 0);
      ASSERT_LT(r, MpiRuntime::world_size());
      ++seen[static_cast<std::size_t>(r)];
      if (r == MpiRuntime::world_rank()) mine = &h;
    }
  }
  for (int n : seen) EXPECT_EQ(n, 1);  // every rank on exactly one host
  ASSERT_NE(mine, nullptr);
  char name[HOST_NAME_MAX + 1] = {};
  gethostname(name, HOST_NAME_MAX);
  EXPECT_EQ(mine->name, name);
  EXPECT_EQ(static_cast<int>(mine->ranks.size()), MpiRuntime::local_size());
  if (const char* size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) EXPECT_EQ(mine->ranks.size(), static_cast<std::size_t>(std::atoi(size)));
  // The banner's line, for the uniform layouts of the tests: one host here, 2 x 2 on the test cluster.
  const std::string summary = MpiRuntime::hosts_summary();
  const std::string n = std::to_string(MpiRuntime::world_size());
  if (hosts.size() == 1) {
    EXPECT_EQ(summary, n + (n == "1" ? " rank" : " ranks") + " on 1 host (" + name + ")");
  } else if (hosts.size() == 2 && hosts[0].ranks.size() == hosts[1].ranks.size()) {
    EXPECT_EQ(summary, n + " ranks on 2 hosts (" + std::to_string(hosts[0].ranks.size()) + " per host: " +
                           hosts[0].name + ", " + hosts[1].name + ")");
    EXPECT_NE(hosts[0].name, hosts[1].name);
  }
}
