// bench_stream.cc — measure_stream(): concurrent copy/add bandwidth of all ranks (STREAM-like).
#include "bench_stream.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "shm_reduce.h"

namespace mirror::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

StreamResult measure_stream(std::size_t bytes, int reps) {
  const std::size_t n = std::max<std::size_t>(1, bytes / sizeof(double));
  std::vector<double> a(n, 1.0), b(n, 2.0), c(n, 0.0);
  double best_copy = 1e30, best_stream = 1e30, best_add = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = std::chrono::steady_clock::now();
    double* __restrict cp = c.data();
    const double* __restrict ap = a.data();
    const double* __restrict bp = b.data();
    for (std::size_t i = 0; i < n; ++i) cp[i] = ap[i];
    best_copy = std::min(best_copy, seconds_since(t0));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = std::chrono::steady_clock::now();
    coll::detail::shm_copy_streaming(c.data(), a.data(), n * sizeof(double));
    best_stream = std::min(best_stream, seconds_since(t0));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) cp[i] = ap[i] + bp[i];
    best_add = std::min(best_add, seconds_since(t0));
  }
  // Keep the result observable so the loops are not removed.
  volatile double sink = c[n / 2];
  (void)sink;
  const double nb = static_cast<double>(n * sizeof(double));
  StreamResult local{2 * nb / best_copy / 1e9, 2 * nb / best_stream / 1e9, 3 * nb / best_add / 1e9}, total;
  MPI_Allreduce(&local.copy_gbs, &total.copy_gbs, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local.stream_copy_gbs, &total.stream_copy_gbs, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local.add_gbs, &total.add_gbs, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

}  // namespace mirror::bench
