// exercise.h — what each fuzz target does with one input file, shared by the libFuzzer targets (tests/fuzz)
// and the regression test of their past findings (tests/fuzz_regression). Each function reads the file the
// way Mirror's programs do and throws mirror::Error when it rejects it; anything else (a crash, a sanitizer
// report, another exception type, a broken promise caught by __builtin_trap) is a finding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mirror/data/idx.h"
#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "mirror/train/checkpoint.h"

namespace mirror::fuzz {

namespace detail {

inline void read_train(const data::Dataset& ds, data::LoaderOptions lo, int64_t batch) {
  data::SamplerOptions so;
  so.seed = 7;
  so.batch_per_rank = batch;
  data::TrainLoader loader(ds, so, lo);
  loader.start_epoch(0);
  data::Batch b;
  for (int i = 0; i < 3 && loader.next(b); ++i) {
  }
  if (loader.steps_per_epoch() > 1) {  // resume mid-epoch
    loader.start_epoch(1, 1);
    loader.next(b);
  }
}

inline void parse_idx_both(const std::vector<uint8_t>& bytes) {
  for (int ndims : {3, 1}) {
    try {
      const data::IdxArray a = data::parse_idx(bytes, ndims, "fuzz");
      std::size_t total = 1;
      for (int64_t d : a.dims) total *= static_cast<std::size_t>(d);
      if (total != a.data.size()) __builtin_trap();  // parse_idx promises product(dims) bytes
    } catch (const Error&) {
    }
  }
}

}  // namespace detail

// The loaders hold a split in memory or a shuffle buffer; what one input may make them allocate is kept
// small (a valid file may legitimately declare a huge split whose chunks were never written).
inline constexpr double kMaxSplitBytes = 32.0 * (1 << 20);

// Dataset::open, then a few batches of TrainLoader (index sharding from memory and from HDF5, files
// sharding) and EvalLoader (1 and 3 ranks).
inline void exercise_dataset(const std::string& path) {
  const data::Dataset ds = data::Dataset::open(path);
  const data::DatasetInfo& info = ds.info();
  const double row = static_cast<double>(info.features) * static_cast<double>(data::dtype_size(info.x_dtype));
  if (row * static_cast<double>(std::max(info.train_size, info.test_size)) > kMaxSplitBytes) return;
  const int64_t batch = std::min<int64_t>(info.train_size, 4);
  data::LoaderOptions lo;
  lo.prefetch_depth = 1;
  lo.in_memory = true;
  detail::read_train(ds, lo, batch);
  lo.prefetch_depth = 0;
  lo.in_memory = false;
  detail::read_train(ds, lo, batch);
  lo.sharding = data::Sharding::kFiles;
  lo.shuffle_buffer = 16;
  detail::read_train(ds, lo, batch);
  for (int world : {1, 3}) {
    data::EvalLoader eval(ds, "test", world, world - 1, 5);
    data::Batch b;
    for (int i = 0; i < 3 && eval.next(b); ++i) {
    }
  }
}

// The IDX converter's parsing: the bytes as they are, and the file through read_maybe_gzipped (zlib), each
// parsed as images (3 dimensions) and labels (1 dimension). Throws when the file cannot be read at all.
inline void exercise_idx(const std::string& path, const std::vector<uint8_t>& raw) {
  detail::parse_idx_both(raw);
  detail::parse_idx_both(data::read_maybe_gzipped(path, std::size_t{16} << 20));
}

// read_checkpoint, then what a resume relies on: every tensor's shape describes its values.
inline void exercise_checkpoint(const std::string& path) {
  const train::CheckpointState s = train::read_checkpoint(path);
  for (const auto* group : {&s.params, &s.optimizer_state}) {
    for (const train::NamedTensor& t : *group) {
      std::size_t n = 1;
      for (int64_t d : t.shape) n *= static_cast<std::size_t>(d);
      if (n != t.values.size()) __builtin_trap();
    }
  }
}

}  // namespace mirror::fuzz
