// host_probe.cc — a small MPI job for the test cluster (scripts/cluster.sh): every rank reports where it runs
// as MPI and the launcher see it, and the job proves that the hosts are apart and connected.
//
// Each rank: MPI_Get_processor_name (its host's name), its local rank and local size from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), the local rank mirror::launch reads from the environment, and
// how many ranks' marker files it sees in /dev/shm (each host has its own /dev/shm, so exactly its local
// size). An MPI_Allreduce of 1 MiB of doubles (rank r contributes r + i) crosses the hosts and is checked
// against the closed-form sum. Rank 0 prints one line per rank, in rank order:
//   rank R host H local L/S env-local L' shm-peers K
// and "allreduce ok" (or the first wrong element, exit 1). The test script checks the lines against the
// hostfile's layout. Usage: mpirun ... host_probe TAG   (TAG keeps the /dev/shm markers of runs apart)
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mirror/launch/local_rank.h"

namespace {

constexpr int kNameLen = MPI_MAX_PROCESSOR_NAME;
constexpr int kCount = 1 << 17;  // doubles in the cross-host allreduce (1 MiB)

struct RankFacts {
  char host[kNameLen];
  int local_rank, local_size, env_local_rank, shm_peers;
};

int count_markers(const std::string& tag) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    if (entry.path().filename().string().rfind(tag + ".", 0) == 0) ++n;
  }
  return n;
}

bool allreduce_ok(int rank, int size) {
  std::vector<double> mine(kCount), sum(kCount);
  for (int i = 0; i < kCount; ++i) mine[i] = rank + i;
  MPI_Allreduce(mine.data(), sum.data(), kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double ranks_sum = size * (size - 1) / 2.0;
  for (int i = 0; i < kCount; ++i) {
    const double expected = ranks_sum + static_cast<double>(size) * i;  // exact in double
    if (sum[i] != expected) {
      std::fprintf(stderr, "[rank %d] allreduce element %d is %.17g, expected %.17g\n", rank, i, sum[i], expected);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string tag = argc > 1 ? argv[1] : "mirror-host-probe";

  RankFacts facts{};
  int len = 0;
  MPI_Get_processor_name(facts.host, &len);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &facts.local_rank);
  MPI_Comm_size(node, &facts.local_size);
  const auto env_local = mirror::launch::read_local_rank();
  facts.env_local_rank = env_local ? env_local->rank : -1;

  const std::string marker = "/dev/shm/" + tag + "." + std::to_string(rank);
  std::ofstream(marker) << rank << "\n";
  MPI_Barrier(MPI_COMM_WORLD);
  facts.shm_peers = count_markers(tag);
  MPI_Barrier(MPI_COMM_WORLD);
  std::filesystem::remove(marker);

  std::vector<RankFacts> all(static_cast<std::size_t>(size));
  MPI_Gather(&facts, sizeof facts, MPI_BYTE, all.data(), sizeof facts, MPI_BYTE, 0, MPI_COMM_WORLD);
  const bool ok = allreduce_ok(rank, size);
  int all_ok = 0, mine = ok ? 1 : 0;
  MPI_Allreduce(&mine, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      const RankFacts& f = all[static_cast<std::size_t>(r)];
      std::printf("rank %d host %s local %d/%d env-local %d shm-peers %d\n", r, f.host, f.local_rank, f.local_size,
                  f.env_local_rank, f.shm_peers);
    }
    std::printf(all_ok ? "allreduce ok (%d doubles, %d ranks)\n" : "allreduce WRONG (%d doubles, %d ranks)\n",
                kCount, size);
  }
  MPI_Comm_free(&node);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
