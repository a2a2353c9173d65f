// fuzz_idx.cc — libFuzzer target for the IDX converter's parsing: the input is one IDX file, plain or
// gzipped, parsed directly and through read_maybe_gzipped (exercise_idx in exercise.h). A mirror::Error is a
// correct rejection.
#include "exercise.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = mirror::fuzz::scratch_path("input.idx.gz");
  mirror::fuzz::write_file(path, data, size);
  try {
    mirror::fuzz::exercise_idx(path, std::vector<uint8_t>(data, data + size));
  } catch (const mirror::Error&) {
  }
  return 0;
}
