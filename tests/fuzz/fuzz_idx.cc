// fuzz_idx.cc — libFuzzer target for the IDX converter's parsing: the input is one IDX file, plain or gzipped,
// read with read_maybe_gzipped (zlib) and parsed with parse_idx as images (3 dimensions) and as labels
// (1 dimension); the raw bytes are also parsed directly. mirror::Error is a correct rejection.
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "mirror/data/idx.h"
#include "mirror/error.h"

namespace {

// Small enough that a gzip bomb is rejected quickly, large enough for every seed.
constexpr std::size_t kMaxDecompressed = std::size_t{16} << 20;

void parse_both(const std::vector<uint8_t>& bytes) {
  for (int ndims : {3, 1}) {
    try {
      const mirror::data::IdxArray a = mirror::data::parse_idx(bytes, ndims, "fuzz");
      std::size_t total = 1;
      for (int64_t d : a.dims) total *= static_cast<std::size_t>(d);
      if (total != a.data.size()) __builtin_trap();  // parse_idx promises product(dims) bytes
    } catch (const mirror::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = mirror::fuzz::scratch_path("input.idx.gz");
  parse_both(std::vector<uint8_t>(data, data + size));
  mirror::fuzz::write_file(path, data, size);
  try {
    parse_both(mirror::data::read_maybe_gzipped(path, kMaxDecompressed));
  } catch (const mirror::Error&) {
  }
  return 0;
}
