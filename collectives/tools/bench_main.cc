// bench_main.cc — mirror-bench: sweeps sizes for one collective and prints nccl-tests' table (rank 0),
// with plain MPI's time and bus bandwidth alongside and the ratio; exits non-zero on any wrong value,
// with the exit code agreed by all ranks.
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_options.h"
#include "bench_runner.h"
#include "bench_stream.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"

namespace {

using mirror::bench::BenchOp;
using mirror::bench::BenchOptions;
using mirror::bench::BenchRow;
using mirror::bench::Timing;

const char* mpi_name(BenchOp op) {
  switch (op) {
    case BenchOp::kAllreduce: return "MPI_Allreduce";
    case BenchOp::kBroadcast: return "MPI_Bcast";
    case BenchOp::kAllgather: return "MPI_Allgather";
    case BenchOp::kReduceScatter: return "MPI_Reduce_scatter_block";
  }
  return "MPI";
}

void print_header(const BenchOptions& o, const mirror::coll::Communicator& comm) {
  const int ranks = comm.size();
  std::printf("# mirror-bench %s: %d ranks, backend %s (transport %s), type %s, redop %s, root %d, iters %d "
              "(fewer above 8 MiB), warmup %d, check %s, %s buffers, consistency check %s%s\n",
              to_string(o.op), ranks, mirror::coll::to_string(comm.backend().buffers), mirror::coll::transport_name(comm),
              mirror::coll::to_string(o.type),
              mirror::coll::to_string(o.redop), o.root, o.iters, o.warmup, o.check ? "on" : "off",
              o.shared_buffers ? "shared (-R 1)" : "ordinary", o.check_collectives ? "on" : "off",
              o.fake_hosts > 0 ? (", " + std::to_string(o.fake_hosts) + " fake hosts (test seam)").c_str() : "");
  std::printf("# %45s %-33s %-33s %s\n", "", "out-of-place", "in-place", mpi_name(o.op));
  std::printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s %9s %7s %7s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "time", "busbw",
              "ratio");
  std::printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s %9s %7s %7s\n", "(B)", "(elements)", "", "",
              "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "mir/MPI");
}

std::string cell(const char* fmt, double v, bool ran) {
  if (!ran) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

void print_row(const BenchOptions& o, const BenchRow& r) {
  const bool reduces = o.op == BenchOp::kAllreduce || o.op == BenchOp::kReduceScatter;
  auto t = [](const Timing& x) { return cell("%.1f", x.time_us, x.ran); };
  auto bw = [](const Timing& x, double v) { return cell("%.3f", v, x.ran); };
  auto wr = [](const Timing& x) { return x.ran ? (x.wrong < 0 ? std::string("N/A") : std::to_string(x.wrong)) : "n/a"; };
  std::printf("  %10zu %12zu %8s %6s %5d %9s %7s %7s %6s %9s %7s %7s %6s %9s %7s %7s\n", r.bytes, r.count,
              mirror::coll::to_string(o.type), reduces ? mirror::coll::to_string(o.redop) : "none",
              o.op == BenchOp::kBroadcast ? o.root : -1, t(r.out_of_place).c_str(),
              bw(r.out_of_place, r.out_of_place.algbw).c_str(), bw(r.out_of_place, r.out_of_place.busbw).c_str(),
              wr(r.out_of_place).c_str(), t(r.in_place).c_str(), bw(r.in_place, r.in_place.algbw).c_str(),
              bw(r.in_place, r.in_place.busbw).c_str(), wr(r.in_place).c_str(), t(r.mpi).c_str(),
              bw(r.mpi, r.mpi.busbw).c_str(), cell("%.2f", r.ratio, r.mpi.ran).c_str());
  std::fflush(stdout);
}

nlohmann::json to_json(const Timing& t) {
  if (!t.ran) return nullptr;
  return {{"time_us", t.time_us}, {"algbw_gbs", t.algbw}, {"busbw_gbs", t.busbw}, {"wrong", t.wrong}};
}

// "staged 1024..32768, single 65536..67108864": the path ordinary buffers took at each size (rank 0).
std::string path_ranges(const std::vector<std::pair<std::size_t, bool>>& rows) {
  std::string out;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j + 1 < rows.size() && rows[j + 1].second == rows[i].second) ++j;
    out += (out.empty() ? "" : ", ") + std::string(rows[i].second ? "single " : "staged ") +
           std::to_string(rows[i].first) + (j > i ? ".." + std::to_string(rows[j].first) : "");
    i = j + 1;
  }
  return out;
}

void print_copy_paths(const BenchOptions& o, const mirror::coll::ShmStagingCounts& counts,
                      const std::vector<std::pair<std::size_t, bool>>& rows) {
  std::printf("# shm copy (--shm-copy %s, rank 0): cross-memory attach %s; %llu single-copy collectives; "
              "path by size (B): %s\n",
              mirror::coll::to_string(o.copy), counts.single_permitted ? "permitted" : "not permitted (staged only)",
              static_cast<unsigned long long>(counts.single), path_ranges(rows).c_str());
}

std::string size_name(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// The copy-path probe's shared figures and the bands they decided (kAuto; rank 0's view, the same on all).
void print_copy_probe(const BenchOptions& o, const mirror::coll::ShmCopyProbe& probe) {
  if (probe.figures.empty()) {
    std::printf("# shm copy probe: not run (%s)\n",
                !o.copy_probe ? "--shm-copy-probe off: fixed bands" : "no ordinary allreduce of 32 KiB or more, "
                                                                      "or cross-memory attach not permitted");
    return;
  }
  std::printf("# shm copy probe (%s, float32 allreduce, slowest rank's best run; cost %.1f ms on rank 0):",
              probe.injected ? "figures injected by the test seam" : "measured", probe.cost_us / 1000.0);
  for (std::size_t k = 0; k < probe.figures.size(); ++k) {
    const auto& f = probe.figures[k];
    if (k == 0 || f.in_place != probe.figures[k - 1].in_place) std::printf(" %s:", f.in_place ? "in place" : "out of place");
    std::printf(" %s staged %.1f single %.1f us -> %s in [%s, %s);", size_name(f.bytes).c_str(), f.staged_us,
                f.single_us, f.single ? "single" : "staged", size_name(f.band_lo).c_str(),
                f.band_hi ? size_name(f.band_hi).c_str() : "...");
  }
  std::printf("\n");
}

nlohmann::json copy_probe_json(const mirror::coll::ShmCopyProbe& probe) {
  if (probe.figures.empty()) return nullptr;
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : probe.figures) {
    figures.push_back({{"bytes", f.bytes}, {"in_place", f.in_place}, {"staged_us", f.staged_us}, {"single_us", f.single_us},
                       {"band_lo", f.band_lo}, {"band_hi", f.band_hi ? nlohmann::json(f.band_hi) : nlohmann::json(nullptr)},
                       {"path", f.single ? "single" : "staged"}});
  }
  return {{"injected", probe.injected}, {"cost_us", probe.cost_us}, {"figures", figures}};
}

}  // namespace

int main(int argc, char** argv) {
  mirror::coll::MpiRuntime runtime(&argc, &argv);
  const int rank = mirror::coll::MpiRuntime::world_rank();
  int code = 0;
  try {
    int parse_code = 0;
    const auto options = mirror::bench::parse_bench_options(argc, argv, rank == 0, &parse_code);
    if (!options) return mirror::coll::agree_exit_code(parse_code);
    const BenchOptions& o = *options;
    mirror::coll::CommOptions copts;
    copts.backend = o.backend;
    copts.timeout = std::chrono::milliseconds(o.timeout_ms);
    copts.shm_staging = o.staging;
    copts.shm_copy = o.copy;
    copts.shm_copy_probe = o.copy_probe;
    copts.check_consistency = o.check_collectives;
    copts.hosts_for_testing = o.fake_hosts;
    auto comm = mirror::coll::make_communicator(copts);
    MIRROR_CHECK(o.op != BenchOp::kBroadcast || (o.root >= 0 && o.root < comm->size()), kInvalidArgument,
                 "-r/--root " << o.root << " is out of range; expected 0.." << comm->size() - 1);
    if (rank == 0) print_header(o, *comm);
    if (o.stream_bytes > 0) {
      const auto s = mirror::bench::measure_stream(o.stream_bytes, 5);
      if (rank == 0) {
        std::printf("# memory bandwidth (STREAM-like, all %d ranks at once, %zu-byte arrays, best of 5): "
                    "copy %.2f GB/s, copy with streaming stores %.2f GB/s, add %.2f GB/s (summed over ranks; "
                    "copy counts 2, add 3 bytes per array byte)\n",
                    comm->size(), o.stream_bytes, s.copy_gbs, s.stream_copy_gbs, s.add_gbs);
      }
    }
    mirror::bench::BenchRunner runner(o, *comm);
    nlohmann::json rows = nlohmann::json::array();
    long long wrong = 0;
    double busbw_sum = 0;
    int nrows = 0;
    std::vector<std::pair<std::size_t, bool>> single_rows;  // (bytes, took the single-copy path)
    for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      const std::uint64_t single_before = mirror::coll::shm_staging_counts(*comm).single;
      const BenchRow r = runner.run(bytes);
      single_rows.emplace_back(bytes, mirror::coll::shm_staging_counts(*comm).single > single_before);
      for (const Timing* t : {&r.out_of_place, &r.in_place}) {
        if (t->ran && t->wrong > 0) wrong += t->wrong;
      }
      busbw_sum += r.out_of_place.ran ? r.out_of_place.busbw : r.in_place.busbw;
      ++nrows;
      if (rank == 0) print_row(o, r);
      rows.push_back({{"bytes", r.bytes}, {"count", r.count}, {"iters", r.iters},
                      {"out_of_place", to_json(r.out_of_place)}, {"in_place", to_json(r.in_place)},
                      {"mpi", to_json(r.mpi)}, {"ratio", r.mpi.ran ? nlohmann::json(r.ratio) : nlohmann::json(nullptr)},
                      {"shm_path", single_rows.back().second ? "single" : "staged"}});
      if (bytes > o.max_bytes / o.factor) break;  // the next step would overflow or pass the end
    }
    if (rank == 0) {
      std::printf("# Out of bounds values : %lld %s\n", wrong, o.check ? (wrong ? "FAILED" : "OK") : "(not checked)");
      std::printf("# Avg bus bandwidth    : %.3f GB/s\n", nrows ? busbw_sum / nrows : 0.0);
      const auto staging = mirror::coll::shm_staging_counts(*comm);
      if (staging.cached + staging.streaming > 0) {
        std::printf("# shm staging stores (%s, rank 0): %llu pipelined allreduces cached, %llu streaming\n",
                    mirror::coll::to_string(o.staging), static_cast<unsigned long long>(staging.cached),
                    static_cast<unsigned long long>(staging.streaming));
      }
      const std::string backend_name = comm->backend().name;
      const auto probe = mirror::coll::shm_copy_probe(*comm);
      if (backend_name == "shm" || backend_name == "hierarchical") {
        print_copy_paths(o, staging, single_rows);
        if (o.copy == mirror::coll::ShmCopy::kAuto) print_copy_probe(o, probe);
      }
      if (staging.direct > 0) {
        std::printf("# shm direct collectives (shared buffers, rank 0): %llu\n",
                    static_cast<unsigned long long>(staging.direct));
      }
      if (!o.json_path.empty()) {
        nlohmann::json doc = {{"op", to_string(o.op)}, {"ranks", comm->size()},
                              {"backend", mirror::coll::to_string(comm->backend().buffers)}, {"type", mirror::coll::to_string(o.type)},
                              {"redop", mirror::coll::to_string(o.redop)}, {"root", o.root}, {"check", o.check},
                              {"transport", comm->backend().name}, {"selection_note", comm->selection_note()},
                              {"check_collectives", o.check_collectives}, {"fake_hosts", o.fake_hosts},
                              {"shared_buffers", o.shared_buffers}, {"shm_copy", mirror::coll::to_string(o.copy)},
                              {"single_permitted", staging.single_permitted}, {"shm_copy_probe", copy_probe_json(probe)},
                              {"wrong", wrong}, {"rows", rows}};
        std::ofstream out(o.json_path);
        MIRROR_CHECK(out.good(), kIo, "cannot open --json file '" << o.json_path << "' for writing");
        out << doc.dump(2) << "\n";
        MIRROR_CHECK(out.good(), kIo, "failed writing --json file '" << o.json_path << "'");
      }
    }
    code = wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] error: %s\n", rank, e.what());
    std::fflush(stderr);
    // A failed rank may leave the others inside a collective: end the whole job.
    mirror::coll::MpiRuntime::abort_job(1);
  }
  return mirror::coll::agree_exit_code(code);
}
