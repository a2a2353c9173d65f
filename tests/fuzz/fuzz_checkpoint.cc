// fuzz_checkpoint.cc — libFuzzer target for the checkpoint loader: the input is one checkpoint file, read
// with mirror::train::read_checkpoint (exercise_checkpoint in exercise.h). A mirror::Error is a correct
// rejection.
#include <hdf5.h>

#include "exercise.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = mirror::fuzz::scratch_path("ckpt-00000001.h5");
  mirror::fuzz::write_file(path, data, size);
  try {
    mirror::fuzz::exercise_checkpoint(path);
  } catch (const mirror::Error&) {
  }
  return 0;
}
