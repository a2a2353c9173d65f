// bench_stream.h — a STREAM-like memory bandwidth measurement for mirror-bench's header: every rank runs
// copy (c = a), the same copy with non-temporal stores (what the shared-memory allreduce writes large
// outputs with), and add (c = a + b) over its own arrays at the same time (MPI_Barrier between passes),
// so the figure is what the ranks of one node get together — the ceiling for a shared-memory collective.
// Bytes counted as STREAM does: copy 2 x array bytes, add 3 x (write-allocate traffic not counted).
#pragma once

#include <cstddef>

namespace mirror::bench {

struct StreamResult {
  double copy_gbs = 0;         // summed over ranks (each rank's best pass)
  double stream_copy_gbs = 0;  // copy with non-temporal stores
  double add_gbs = 0;
};

// Collective over MPI_COMM_WORLD. `bytes` per array (three arrays per rank), best of `reps` passes.
StreamResult measure_stream(std::size_t bytes, int reps);

}  // namespace mirror::bench
