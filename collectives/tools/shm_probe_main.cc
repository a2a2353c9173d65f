// shm_probe_main.cc — mirror-shm-probe: what writing and reading lines shared between two ranks' cores
// costs on this machine right now, the measurement behind the shared-memory transport's choice of staging
// stores (collectives/src/shm_store_policy.h, docs/collectives-shm.md). Run as mpirun -np 2.
//
// For each of --segments fresh shared segments (MPI_Win_allocate_shared), --repeats times, in µs per MiB:
//   plain-after-peer-read   rank 0 rewrites (memcpy) lines that rank 1 has just read
//   plain-own               rank 0 rewrites lines no other core has touched
//   stream-after-peer-read  rank 0 rewrites lines rank 1 has just read with non-temporal stores
//   peer-read-plain         rank 1 reads lines rank 0 has just written with plain stores
//   peer-read-stream        rank 1 reads lines rank 0 has just written with non-temporal stores
// The first column against the third is the choice: when the ranks' cores share a cache the first is the
// cheaper; when the hypervisor has placed them apart it can cost an order of magnitude more.
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mirror/coll/runtime.h"
#include "mirror/error.h"
#include "shm_reduce.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kColumns = 5;
const char* const kNames[kColumns] = {"plain-after-peer-read", "plain-own", "stream-after-peer-read",
                                      "peer-read-plain", "peer-read-stream"};

double since_us(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

// Reads every line of [p, p + bytes); returns a value that depends on them so the loads stay.
std::uint64_t touch(const unsigned char* p, std::size_t bytes) {
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < bytes; i += 64) acc += p[i];
  return acc;
}

// One segment: five regions of `bytes`, every measurement `repeats` times; returns µs per MiB, per column.
std::vector<double> probe_segment(MPI_Comm node, int rank, std::size_t bytes, int repeats, std::uint64_t* sink) {
  const std::size_t stride = (bytes + 4095) / 4096 * 4096;
  unsigned char* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate_shared(rank == 0 ? static_cast<MPI_Aint>(kColumns * stride + 64) : 0, 1, MPI_INFO_NULL, node,
                          &base, &win);
  MPI_Aint size = 0;
  int disp = 0;
  MPI_Win_shared_query(win, 0, &size, &disp, &base);
  base += (64 - reinterpret_cast<std::uintptr_t>(base) % 64) % 64;
  unsigned char* region[kColumns];
  for (int c = 0; c < kColumns; ++c) region[c] = base + static_cast<std::size_t>(c) * stride;
  std::vector<unsigned char> source(bytes);
  if (rank == 0) std::memset(base, 1, kColumns * stride);
  MPI_Barrier(node);
  std::vector<double> us(kColumns, 0.0);
  for (int r = 0; r < repeats; ++r) {
    std::memset(source.data(), r + 2, bytes);
    if (rank == 1) *sink += touch(region[0], bytes) + touch(region[2], bytes);
    MPI_Barrier(node);
    if (rank == 0) {
      auto t = Clock::now();
      std::memcpy(region[0], source.data(), bytes);
      us[0] += since_us(t);
      t = Clock::now();
      std::memcpy(region[1], source.data(), bytes);
      us[1] += since_us(t);
      t = Clock::now();
      mirror::coll::detail::shm_copy_streaming(region[2], source.data(), bytes);
      us[2] += since_us(t);
      std::memcpy(region[3], source.data(), bytes);
      mirror::coll::detail::shm_copy_streaming(region[4], source.data(), bytes);
    }
    MPI_Barrier(node);
    if (rank == 1) {
      for (int c : {3, 4}) {
        const auto t = Clock::now();
        *sink += touch(region[c], bytes);
        us[static_cast<std::size_t>(c)] += since_us(t);
      }
    }
    MPI_Barrier(node);
  }
  std::vector<double> total(kColumns);
  MPI_Allreduce(us.data(), total.data(), kColumns, MPI_DOUBLE, MPI_SUM, node);  // each column has one rank's time
  const double mib = static_cast<double>(bytes) / (1 << 20);
  for (double& t : total) t /= repeats * mib;
  MPI_Win_free(&win);
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  mirror::coll::MpiRuntime runtime(&argc, &argv);
  const int rank = mirror::coll::MpiRuntime::world_rank();
  CLI::App app{"mirror-shm-probe: cost of writing/reading lines shared by two ranks' cores (run: mpirun -np 2)"};
  int mib = 1, repeats = 10, segments = 8;
  app.add_option("--mib", mib, "MiB per region")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--repeats", repeats, "Measurements per segment")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--segments", segments, "Fresh shared segments, one line each")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
    return mirror::coll::agree_exit_code(code == 0 ? 0 : 2);
  }
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_ranks = 0;
  MPI_Comm_size(node, &node_ranks);
  if (ranks != 2 || node_ranks != 2) {
    if (rank == 0) {
      std::fprintf(stderr, "error: mirror-shm-probe needs exactly 2 ranks on one node (got %d, %d on this node)\n",
                   ranks, node_ranks);
    }
    MPI_Comm_free(&node);
    return 2;
  }
  std::uint64_t sink = 0;
  std::vector<std::vector<double>> rows;
  if (rank == 0) {
    std::printf("# mirror-shm-probe: 2 ranks, %d MiB regions, %d repeats per segment, us per MiB (lower is faster)\n",
                mib, repeats);
    std::printf("%8s", "segment");
    for (const char* n : kNames) std::printf(" %23s", n);
    std::printf("\n");
  }
  for (int s = 0; s < segments; ++s) {
    rows.push_back(probe_segment(node, rank, static_cast<std::size_t>(mib) << 20, repeats, &sink));
    if (rank == 0) {
      std::printf("%8d", s);
      for (double v : rows.back()) std::printf(" %23.1f", v);
      std::printf("\n");
    }
  }
  if (rank == 0) {
    std::printf("%8s", "median");
    for (int c = 0; c < kColumns; ++c) {
      std::vector<double> col;
      for (const auto& r : rows) col.push_back(r[static_cast<std::size_t>(c)]);
      std::nth_element(col.begin(), col.begin() + static_cast<std::ptrdiff_t>(col.size() / 2), col.end());
      std::printf(" %23.1f", col[col.size() / 2]);
    }
    std::printf("\n");
  }
  if (sink == 42) std::printf("\n");  // keeps the reads
  MPI_Comm_free(&node);
  return 0;
}
