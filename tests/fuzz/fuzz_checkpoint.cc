// fuzz_checkpoint.cc — libFuzzer target for the checkpoint loader: the input is one checkpoint file, read
// with mirror::train::read_checkpoint (every attribute, text dataset and tensor, with their CRC-32s).
// mirror::Error is a correct rejection; a crash, a sanitizer report or another exception is a finding.
#include <hdf5.h>

#include <cstdint>

#include "fuzz_util.h"
#include "mirror/error.h"
#include "mirror/train/checkpoint.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = mirror::fuzz::scratch_path("ckpt-00000001.h5");
  mirror::fuzz::write_file(path, data, size);
  try {
    const mirror::train::CheckpointState s = mirror::train::read_checkpoint(path);
    // What a resume does next with the tensors: their shapes must describe their values.
    for (const auto* group : {&s.params, &s.optimizer_state}) {
      for (const mirror::train::NamedTensor& t : *group) {
        std::size_t n = 1;
        for (int64_t d : t.shape) n *= static_cast<std::size_t>(d);
        if (n != t.values.size()) __builtin_trap();
      }
    }
  } catch (const mirror::Error&) {
  }
  return 0;
}
