// bench_runner.h — BenchRunner: times one collective at one size through Mirror (out-of-place and
// in-place, checked with exact-sum data) and through the plain MPI call, and returns the table row.
#pragma once

#include <cstddef>
#include <memory>

#include "bench_options.h"
#include "mirror/coll/communicator.h"

namespace mirror::bench {

struct Timing {
  bool ran = false;      // false: not applicable (e.g. out-of-place broadcast, MPI with float16)
  double time_us = 0;    // mean per iteration, slowest rank
  double algbw = 0;      // GB/s
  double busbw = 0;      // GB/s
  long long wrong = 0;   // wrong elements summed over ranks (-1: not checked)
};

struct BenchRow {
  std::size_t bytes = 0;  // nccl-tests' size: the largest buffer (allgather: recv, reduce_scatter: send)
  std::size_t count = 0;  // elements in that buffer
  int iters = 0;
  Timing out_of_place, in_place, mpi;
  double ratio = 0;  // mirror busbw / MPI busbw (0 when there is no MPI baseline)
};

// busbw / algbw for `op` over n ranks, as nccl-tests defines it.
double bus_factor(BenchOp op, int n);
// Iterations for a size: `iters`, reduced above 8 MiB so the sweep stays short.
int iterations_for(std::size_t bytes, int iters);

class BenchRunner {
 public:
  BenchRunner(const BenchOptions& options, coll::Communicator& comm);
  ~BenchRunner();
  BenchRow run(std::size_t bytes);

 private:
  struct Buffers;
  Timing time_mirror(std::size_t count, bool in_place, int iters);
  Timing time_mpi(std::size_t count, int iters);
  long long check(std::size_t count, bool in_place);
  void call(std::size_t count, bool in_place);
  void fill_inputs(std::size_t count, bool in_place);
  long long count_wrong(std::size_t count, bool in_place);

  const BenchOptions& o_;
  coll::Communicator& comm_;
  std::unique_ptr<Buffers> buf_;
};

}  // namespace mirror::bench
