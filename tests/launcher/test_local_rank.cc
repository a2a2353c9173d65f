// test_local_rank.cc — the local rank from each launcher's variable, the order they are read in, bad
// values, and the local rank -> GPU rule.
#include <gtest/gtest.h>

#include <map>

#include "mirror/error.h"
#include "mirror/launch/local_rank.h"

namespace mirror::launch {
namespace {

EnvGetter from(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LocalRank, NoneSetGivesNothing) { EXPECT_FALSE(read_local_rank(from({{"OMPI_COMM_WORLD_RANK", "3"}}))); }

TEST(LocalRank, EachLauncherVariable) {
  struct Case {
    const char* var;
    const char* size_var;
  };
  for (const Case c : {Case{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                       Case{"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
                       Case{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}, Case{"PALS_LOCAL_RANKID", nullptr},
                       Case{"SLURM_LOCALID", nullptr}}) {
    std::map<std::string, std::string> vars = {{c.var, "2"}};
    if (c.size_var) vars.emplace(c.size_var, "4");
    const auto local = read_local_rank(from(vars));
    ASSERT_TRUE(local) << c.var;
    EXPECT_EQ(local->rank, 2) << c.var;
    EXPECT_EQ(local->source, c.var);
    EXPECT_EQ(local->size.has_value(), c.size_var != nullptr) << c.var;
    if (c.size_var) {
      EXPECT_EQ(*local->size, 4);
    }
  }
}

TEST(LocalRank, LauncherVariableBeatsSlurm) {
  const auto local = read_local_rank(from({{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  ASSERT_TRUE(local);
  EXPECT_EQ(local->rank, 1);
  EXPECT_EQ(local->source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(LocalRank, BadValuesAreErrors) {
  for (const char* bad : {"", "x", "-1", "1.5", "2x"}) {
    EXPECT_THROW(read_local_rank(from({{"OMPI_COMM_WORLD_LOCAL_RANK", bad}})), Error) << "'" << bad << "'";
  }
  EXPECT_THROW(read_local_rank(from({{"MPI_LOCALRANKID", "4"}, {"MPI_LOCALNRANKS", "4"}})), Error);
}

TEST(LocalRank, GpuIsTheLocalRankWhenThereAreEnough) {
  EXPECT_EQ(gpu_for_local_rank({3, 8, "SLURM_LOCALID"}, 8), 3);
  EXPECT_EQ(gpu_for_local_rank({0, 1, "x"}, 1), 0);
  EXPECT_THROW(gpu_for_local_rank({2, 4, "x"}, 2), Error);
  EXPECT_THROW(gpu_for_local_rank({0, 1, "x"}, 0), Error);
}

}  // namespace
}  // namespace mirror::launch
