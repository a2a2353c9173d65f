// bench.h — `mirror-data bench`: reader throughput and the time a training loop waits for data.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace mirror::data {

struct BenchOptions {
  std::string path;
  int64_t batch = 64;
  int64_t steps = 0;        // 0: one epoch
  double compute_ms = 2.0;  // simulated compute per step
  bool busy = false;        // simulate compute with a busy loop (CPU training) instead of a sleep (GPU training)
  int prefetch_depth = 2;
  std::string sharding = "index";
  int rank = 0, world = 1;
};

// Prints one table per rank: HDF5 random-gather, HDF5 sequential and in-memory-load throughput
// (samples/s, MB/s of stored bytes), then wait time per step with prefetch off and on.
void run_bench(const BenchOptions& options, std::ostream& out);

}  // namespace mirror::data
