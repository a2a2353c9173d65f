// bench_options.cc — mirror-bench's command line (CLI11) and size parsing.
#include "bench_options.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>
#include <limits>

#include "mirror/error.h"

namespace mirror::bench {

const char* to_string(BenchOp op) {
  switch (op) {
    case BenchOp::kAllreduce: return "allreduce";
    case BenchOp::kBroadcast: return "broadcast";
    case BenchOp::kAllgather: return "allgather";
    case BenchOp::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

std::size_t parse_size(const std::string& text, const std::string& flag) {
  std::size_t i = 0;
  unsigned long long value = 0;
  bool digits = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const unsigned d = static_cast<unsigned>(text[i] - '0');
    MIRROR_CHECK(value <= (std::numeric_limits<unsigned long long>::max() - d) / 10, kInvalidArgument,
                 "invalid size '" << text << "' for " << flag << ": too large");
    value = value * 10 + d;
    digits = true;
    ++i;
  }
  std::string suffix = text.substr(i);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (suffix == "" || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") shift = 30;
  else digits = false;
  MIRROR_CHECK(digits, kInvalidArgument,
               "invalid size '" << text << "' for " << flag << ": expected a byte count like 1024, 1K, 64M or 1G");
  MIRROR_CHECK(value <= (std::numeric_limits<std::size_t>::max() >> shift), kInvalidArgument,
               "invalid size '" << text << "' for " << flag << ": too large");
  return static_cast<std::size_t>(value) << shift;
}

std::optional<BenchOptions> parse_bench_options(int argc, char** argv, bool print, int* exit_code) {
  BenchOptions o;
  CLI::App app{"mirror-bench: time Mirror's collectives against plain MPI, in nccl-tests' table format.\n"
               "Run under mpirun, e.g. mpirun -np 2 mirror-bench allreduce -b 1K -e 64M -f 4 -c 1"};
  std::string op_name, min_text = "1K", max_text = "1M", type_name = "float32", redop_name = "sum";
  std::string backend_name = "host", transport_name = "auto", staging_name = "auto", stream_text = "64M";
  std::string copy_name = "auto";
  int check = 1, shared = 0;
  app.add_option("op", op_name, "Collective to time")
      ->required()
      ->check(CLI::IsMember({"allreduce", "broadcast", "allgather", "reduce_scatter"}));
  app.add_option("-b,--minbytes", min_text, "Smallest size in bytes (1K, 64M, ...)")->capture_default_str();
  app.add_option("-e,--maxbytes", max_text, "Largest size in bytes")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "Multiply the size by this from one row to the next")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  app.add_option("-t,--datatype", type_name, "float32, float64, float16, bfloat16, int32 or int64")
      ->capture_default_str();
  app.add_option("-o,--op", redop_name, "Reduction for allreduce/reduce_scatter: sum, avg, min, max or prod")
      ->capture_default_str();
  app.add_option("-r,--root", o.root, "Root rank of broadcast")->capture_default_str();
  app.add_option("-c,--check", check, "Check results with exact-sum data, zero tolerance (0 or 1)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1));
  app.add_option("-n,--iters", o.iters, "Timed iterations per size (fewer above 8 MiB)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("-w,--warmup_iters", o.warmup, "Untimed iterations before timing")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--backend", backend_name, "Communicator backend: host or nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"host", "nccl"}));
  app.add_option("--transport", transport_name,
                 "Host backend transport: auto (shm when all ranks share one host, hierarchical across hosts "
                 "with as many ranks each, else mpi), shm, hierarchical or mpi")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "shm", "hierarchical", "mpi"}));
  app.add_option("--check-collectives", o.check_collectives,
                 "Check that all ranks issue the same collective before data moves (on or off; off only to "
                 "measure its cost)")
      ->check(CLI::IsMember({"on", "off"}))->default_str("on");
  app.add_option("--fake-hosts", o.fake_hosts,
                 "Test seam: treat consecutive blocks of ranks as this many hosts (0: the real hosts)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--shm-staging", staging_name,
                 "Shared-memory transport: how staging buffers are written: auto (measured), cached or streaming")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cached", "streaming"}));
  app.add_option("--shm-copy", copy_name,
                 "Shared-memory transport, ordinary buffers: auto (single copy where measured faster), staged "
                 "(through the staging buffers) or single (cross-memory attach; stages if the probe failed)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "staged", "single"}));
  app.add_option("--shm-copy-probe", o.copy_probe,
                 "Shared-memory transport, --shm-copy auto: time both allreduce paths at a few sizes at the first "
                 "allreduce of at least 32 KiB and choose per size band (on), or use the fixed bands (off)")
      ->check(CLI::IsMember({"on", "off"}))->default_str("on");
  app.add_option("-R,--shared-buffers", shared,
                 "Host buffers from Communicator::allocate_shared (1), which the shared-memory transport's "
                 "allreduce reads and writes directly, or ordinary memory (0); like nccl-tests' -R")
      ->capture_default_str()
      ->check(CLI::Range(0, 1));
  app.add_option("--stream", stream_text,
                 "Bytes per array of the STREAM-like copy/add measurement printed in the header (0: skip)")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_ms, "Collective timeout in ms")->capture_default_str()->check(CLI::Range(1L, 86400000L));
  app.add_option("--json", o.json_path, "Also write the results to this JSON file (rank 0)");
  try {
    app.parse(argc, argv);
    o.min_bytes = parse_size(min_text, "-b/--minbytes");
    o.max_bytes = parse_size(max_text, "-e/--maxbytes");
    MIRROR_CHECK(o.min_bytes > 0, kInvalidArgument, "-b/--minbytes must be > 0");
    MIRROR_CHECK(o.min_bytes <= o.max_bytes, kInvalidArgument,
                 "-b/--minbytes (" << o.min_bytes << ") must not exceed -e/--maxbytes (" << o.max_bytes << ")");
    o.type = coll::parse_dtype(type_name);
    o.redop = coll::parse_reduce_op(redop_name);
    o.backend = coll::parse_backend(backend_name, transport_name);
    o.staging = coll::parse_shm_staging(staging_name);
    o.copy = coll::parse_shm_copy(copy_name);
    o.stream_bytes = stream_text == "0" ? 0 : parse_size(stream_text, "--stream");
    o.check = check != 0;
    o.shared_buffers = shared != 0;
    MIRROR_CHECK(!(o.shared_buffers && o.backend && o.backend->buffers == coll::Buffers::kDevice), kInvalidArgument,
                 "-R/--shared-buffers 1 needs --backend host (the nccl backend works on device memory)");
    if (op_name == "allreduce") o.op = BenchOp::kAllreduce;
    else if (op_name == "broadcast") o.op = BenchOp::kBroadcast;
    else if (op_name == "allgather") o.op = BenchOp::kAllgather;
    else o.op = BenchOp::kReduceScatter;
  } catch (const CLI::ParseError& e) {
    if (print) app.exit(e);
    *exit_code = e.get_exit_code() == 0 ? 0 : 2;
    return std::nullopt;
  } catch (const Error& e) {
    if (print) std::cerr << "error: " << e.message() << "\nRun with --help for more information.\n";
    *exit_code = 2;
    return std::nullopt;
  }
  return o;
}

}  // namespace mirror::bench
