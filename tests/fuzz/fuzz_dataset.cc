// fuzz_dataset.cc — libFuzzer target for the dataset reader: the input is the bytes of one .h5 file, opened
// with Dataset::open and, when it passes, read for a few batches by TrainLoader and EvalLoader
// (exercise_dataset in exercise.h). A mirror::Error is a correct rejection.
#include <hdf5.h>

#include "exercise.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's stack dumps would only slow the fuzzer down
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = mirror::fuzz::scratch_path("dataset.h5");
  mirror::fuzz::write_file(path, data, size);
  try {
    mirror::fuzz::exercise_dataset(path);
  } catch (const mirror::Error&) {
  }
  return 0;
}
