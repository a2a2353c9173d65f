// local_rank.cc — reads the local rank from the launcher's variables (the list is in local_rank.h).
#include "mirror/launch/local_rank.h"

#include <cstdlib>

#include "mirror/error.h"

namespace mirror::launch {
namespace {

struct RankVariables {
  const char* rank;
  const char* size;  // nullptr when the launcher has none
};

constexpr RankVariables kVariables[] = {
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"PALS_LOCAL_RANKID", nullptr},
    {"SLURM_LOCALID", nullptr},
};

int parse_count(const std::string& name, const std::string& value) {
  std::size_t used = 0;
  long parsed = -1;
  try {
    parsed = std::stol(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MIRROR_CHECK(used == value.size() && !value.empty() && parsed >= 0 && parsed < (1L << 30), kInvalidArgument,
               "environment variable " << name << "='" << value << "' is not a non-negative integer "
                                       << "(it should be set by the MPI launcher)");
  return static_cast<int>(parsed);
}

}  // namespace

EnvGetter process_env_getter() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LocalRank> read_local_rank(const EnvGetter& getenv_fn) {
  for (const auto& vars : kVariables) {
    const auto rank = getenv_fn(vars.rank);
    if (!rank) continue;
    LocalRank local;
    local.rank = parse_count(vars.rank, *rank);
    local.source = vars.rank;
    if (vars.size) {
      if (const auto size = getenv_fn(vars.size)) {
        local.size = parse_count(vars.size, *size);
        MIRROR_CHECK(local.rank < *local.size, kInvalidArgument,
                     vars.rank << "=" << local.rank << " is not below " << vars.size << "=" << *local.size);
      }
    }
    return local;
  }
  return std::nullopt;
}

int gpu_for_local_rank(const LocalRank& local, int gpu_count) {
  MIRROR_CHECK(gpu_count > 0, kInvalidArgument,
               "local rank " << local.rank << " (" << local.source << ") needs a GPU but this machine shows none");
  MIRROR_CHECK(local.rank < gpu_count, kInvalidArgument,
               "local rank " << local.rank << " (" << local.source << ") has no GPU of its own: this machine shows "
                             << gpu_count << " GPU(s); start at most " << gpu_count
                             << " ranks per machine (mirrorrun does by default)");
  return local.rank;
}

}  // namespace mirror::launch
