// bench_options.h — BenchOptions: mirror-bench's settings, built once from the command line by CLI11
// (the help text comes from the same table as the parser), and parse_size() for "1K"/"64M"-style sizes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "mirror/coll/communicator.h"
#include "mirror/coll/types.h"

namespace mirror::bench {

enum class BenchOp { kAllreduce, kBroadcast, kAllgather, kReduceScatter };
const char* to_string(BenchOp op);

struct BenchOptions {
  BenchOp op = BenchOp::kAllreduce;
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = 1024 * 1024;
  std::size_t factor = 2;
  coll::DataType type = coll::DataType::kFloat32;
  coll::ReduceOp redop = coll::ReduceOp::kSum;
  int root = 0;
  bool check = true;
  int iters = 20;
  int warmup = 5;
  const coll::BackendInfo* backend = nullptr;  // --backend + --transport; nullptr: host, chosen automatically
  coll::ShmStaging staging = coll::ShmStaging::kAuto;          // shm transport: auto | cached | streaming
  coll::ShmCopy copy = coll::ShmCopy::kAuto;  // shm transport, ordinary buffers: auto | staged | single
  bool copy_probe = true;  // CommOptions::shm_copy_probe (kAuto's measured bands; off: the fixed bands)
  bool shared_buffers = false;  // host buffers from Communicator::allocate_shared (nccl-tests' -R analogue)
  std::size_t stream_bytes = std::size_t{64} << 20;  // STREAM-like measurement per array; 0: skip it
  long timeout_ms = 60000;
  bool check_collectives = true;  // CommOptions::check_consistency
  int fake_hosts = 0;             // CommOptions::hosts_for_testing (test seam)
  std::string json_path;  // empty: no JSON
};

// "4096", "1K", "64M", "1G" (binary multiples; an optional trailing "B" or "iB" is accepted).
// Throws mirror::Error(kInvalidArgument) naming `flag` and what was expected.
std::size_t parse_size(const std::string& text, const std::string& flag);

// Parses argv. Returns the options, or std::nullopt with *exit_code set when the program should stop
// now (help printed: 0; bad command line: 2, message printed on rank 0 only when `print` is true).
std::optional<BenchOptions> parse_bench_options(int argc, char** argv, bool print, int* exit_code);

}  // namespace mirror::bench
