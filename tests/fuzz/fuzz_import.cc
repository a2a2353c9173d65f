// fuzz_import.cc — libFuzzer target for `mirror-data import`'s parsers of untrusted files: the input is
// imported once as a .npy (x and y both read from it, so a 1-d integer array gets through to the
// conversions and the writer) and once as an .npz (libzip, then the .npy parser on its members). A
// mirror::Error is a correct rejection; anything else (a crash, a sanitizer report, a hang) is a bug.
#include "fuzz_util.h"
#include "mirror/data/import.h"
#include "mirror/error.h"

namespace {

void try_import(const mirror::data::ImportOptions& options, const std::string& out) {
  try {
    mirror::data::import_dataset(out, options);
  } catch (const mirror::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string npy = mirror::fuzz::scratch_path("input.npy");
  static const std::string npz = mirror::fuzz::scratch_path("input.npz");
  static const std::string out = mirror::fuzz::scratch_path("out.h5");
  mirror::fuzz::write_file(npy, data, size);
  mirror::fuzz::write_file(npz, data, size);
  mirror::data::ImportOptions o;
  o.x_name = npy;
  o.y_name = npy;
  o.test_fraction = 0.5;
  try_import(o, out);
  mirror::data::ImportOptions z;
  z.source = npz;
  z.test_fraction = 0.5;
  try_import(z, out);
  return 0;
}
