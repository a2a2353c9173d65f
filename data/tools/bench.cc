// bench.cc — run_bench: times the data library's readers on a real file with the public API only.
#include "bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "mirror/data/loader.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Stands in for a training step: a sleep leaves the CPU to the prefetch thread as a GPU step does; a busy
// loop competes with it as a CPU step does.
void compute(double ms, bool busy) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
  if (!busy) {
    std::this_thread::sleep_until(end);
    return;
  }
  while (Clock::now() < end) {
  }
}

struct LoopResult {
  double total_s = 0, wait_s = 0;
  int64_t steps = 0, samples = 0;
};

LoopResult loop(const Dataset& ds, const BenchOptions& o, bool in_memory, int prefetch, double compute_ms) {
  // compute_ms > 0: simulate a training step after each batch.
  SamplerOptions so{1234, o.world, o.rank, o.batch, 0};
  LoaderOptions lo;
  lo.in_memory = in_memory;
  lo.prefetch_depth = prefetch;
  lo.sharding = parse_sharding(o.sharding);
  TrainLoader loader(ds, so, lo);
  const int64_t steps = o.steps > 0 ? std::min(o.steps, loader.steps_per_epoch()) : loader.steps_per_epoch();
  loader.start_epoch(0, loader.steps_per_epoch() - steps);
  LoopResult r;
  Batch b;
  const auto t0 = Clock::now();
  while (loader.next(b)) {
    r.wait_s += b.wait_seconds;
    r.samples += b.size;
    ++r.steps;
    if (compute_ms > 0) compute(compute_ms, o.busy);
  }
  r.total_s = since(t0);
  return r;
}

}  // namespace

void run_bench(const BenchOptions& o, std::ostream& out) {
  const Dataset ds = Dataset::open(o.path);
  MIRROR_CHECK(!ds.info().text, kInvalidArgument,
               "mirror-data bench measures datasets of samples; " << ds.describe() << " is a token dataset");
  const double row_mb = static_cast<double>(ds.info().features * static_cast<int64_t>(dtype_size(ds.info().x_dtype))) / 1e6;
  char line[256];
  auto row = [&](const char* what, int64_t samples, double secs) {
    std::snprintf(line, sizeof line, "[rank %d/%d] %-34s %9lld samples %8.3f s %12.0f samples/s %9.1f MB/s\n", o.rank,
                  o.world, what, static_cast<long long>(samples), secs, samples / secs, samples * row_mb / secs);
    out << line;
  };
  const bool files = parse_sharding(o.sharding) == Sharding::kFiles;
  // 1. This rank's training batches straight from HDF5, no compute, no prefetch: random gather with
  //    coalescing (index sharding) or sequential blocks through the shuffle buffer (files sharding).
  const LoopResult h5 = loop(ds, o, /*in_memory=*/false, 0, 0);
  row(files ? "hdf5 stream (files sharding)" : "hdf5 gather (index sharding)", h5.samples, h5.total_s);
  // 2. Sequential read of this rank's contiguous part (evaluation path).
  {
    EvalLoader ev(ds, "train", o.world, o.rank, o.batch);
    Batch b;
    int64_t n = 0;
    const auto t0 = Clock::now();
    while (ev.next(b)) n += b.size;
    row("hdf5 sequential (eval part)", n, since(t0));
  }
  // 3. Loading the whole split into memory (in_memory mode), then gathering from memory.
  if (!files) {
    const auto t0 = Clock::now();
    SamplerOptions so{1234, o.world, o.rank, o.batch, 0};
    TrainLoader loader(ds, so, LoaderOptions{});
    row("load split into memory", ds.info().train_size, since(t0));
    const LoopResult mem = loop(ds, o, /*in_memory=*/true, 0, 0);
    row("memory gather (index sharding)", mem.samples, mem.total_s);
  }
  // 4. A training loop with simulated compute: time spent waiting in next(), prefetch off vs on.
  for (bool in_memory : {false, true}) {
    if (files && in_memory) continue;
    const LoopResult off = loop(ds, o, in_memory, 0, o.compute_ms);
    const LoopResult on = loop(ds, o, in_memory, o.prefetch_depth, o.compute_ms);
    std::snprintf(line, sizeof line,
                  "[rank %d/%d] wait, %s, %s %.2f ms/step, %lld steps: prefetch off %.3f ms/step (loop %.3f s), "
                  "prefetch %d: %.3f ms/step (loop %.3f s)\n",
                  o.rank, o.world, in_memory ? "in memory" : "hdf5     ", o.busy ? "busy" : "sleep", o.compute_ms,
                  static_cast<long long>(off.steps), 1e3 * off.wait_s / std::max<int64_t>(off.steps, 1), off.total_s,
                  o.prefetch_depth, 1e3 * on.wait_s / std::max<int64_t>(on.steps, 1), on.total_s);
    out << line;
  }
}

}  // namespace mirror::data
