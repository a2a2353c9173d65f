// fuzz_dataset.cc — libFuzzer target for the dataset reader: the input is the bytes of one .h5 file, opened
// with Dataset::open and, when it passes, read for a few batches by TrainLoader (index sharding from memory
// and from HDF5, files sharding) and EvalLoader. Any mirror::Error is a correct rejection; a crash, a
// sanitizer report or any other exception is a finding.
#include <hdf5.h>

#include <algorithm>
#include <cstdint>

#include "fuzz_util.h"
#include "mirror/data/loader.h"
#include "mirror/error.h"

namespace {

using namespace mirror::data;

// The loaders hold a split in memory or a shuffle buffer; keep what one input may make them allocate small
// (a valid file may legitimately declare a huge split whose chunks are never written).
constexpr double kMaxSplitBytes = 32.0 * (1 << 20);

void read_train(const Dataset& ds, LoaderOptions lo, int64_t batch) {
  SamplerOptions so;
  so.seed = 7;
  so.batch_per_rank = batch;
  TrainLoader loader(ds, so, lo);
  loader.start_epoch(0);
  Batch b;
  for (int i = 0; i < 3 && loader.next(b); ++i) {
  }
  if (loader.steps_per_epoch() > 1) {  // resume mid-epoch
    loader.start_epoch(1, 1);
    loader.next(b);
  }
}

void exercise(const std::string& path) {
  const Dataset ds = Dataset::open(path);
  const DatasetInfo& info = ds.info();
  const double row = static_cast<double>(info.features) * static_cast<double>(dtype_size(info.x_dtype));
  if (row * static_cast<double>(std::max(info.train_size, info.test_size)) > kMaxSplitBytes) return;
  const int64_t batch = std::min<int64_t>(info.train_size, 4);
  LoaderOptions lo;
  lo.prefetch_depth = 1;
  lo.in_memory = true;
  read_train(ds, lo, batch);
  lo.prefetch_depth = 0;
  lo.in_memory = false;
  read_train(ds, lo, batch);
  lo.sharding = Sharding::kFiles;
  lo.shuffle_buffer = 16;
  read_train(ds, lo, batch);
  for (int world : {1, 3}) {
    EvalLoader eval(ds, "test", world, world - 1, 5);
    Batch b;
    for (int i = 0; i < 3 && eval.next(b); ++i) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's stack dumps would only slow the fuzzer down
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = mirror::fuzz::scratch_path("dataset.h5");
  mirror::fuzz::write_file(path, data, size);
  try {
    exercise(path);
  } catch (const mirror::Error&) {
    // a clean rejection
  }
  return 0;
}
