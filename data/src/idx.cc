// idx.cc — IDX parsing with every header field validated, and zlib decompression of .gz input.
#include "mirror/data/idx.h"

#include <zlib.h>

#include <filesystem>

#include "mirror/error.h"

namespace mirror::data {

IdxArray parse_idx(const std::vector<uint8_t>& bytes, int expected_ndims, const std::string& name) {
  MIRROR_CHECK(bytes.size() >= 4, kFormat, "IDX file '" << name << "' is " << bytes.size()
                                                       << " bytes long; expected at least a 4-byte header");
  MIRROR_CHECK(bytes[0] == 0 && bytes[1] == 0, kFormat,
               "IDX file '" << name << "' does not start with the magic 0x0000; expected an IDX file");
  MIRROR_CHECK(bytes[2] == 0x08, kFormat, "IDX file '" << name << "' has element type 0x" << std::hex
                                                       << int(bytes[2]) << std::dec << "; expected 0x08 (unsigned byte)");
  const int ndims = bytes[3];
  MIRROR_CHECK(ndims == expected_ndims, kFormat, "IDX file '" << name << "' has " << ndims
                                                              << " dimensions; expected " << expected_ndims);
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(ndims);
  MIRROR_CHECK(bytes.size() >= header, kFormat, "IDX file '" << name << "' is truncated inside its header");
  IdxArray out;
  uint64_t total = 1;
  for (int d = 0; d < ndims; ++d) {
    const uint8_t* p = bytes.data() + 4 + 4 * d;
    const uint32_t v = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
    MIRROR_CHECK(v >= 1 && v <= (1u << 30), kFormat, "IDX file '" << name << "': dimension " << d << " is " << v
                                                                  << "; expected 1 .. 2^30");
    total *= v;
    MIRROR_CHECK(total <= (uint64_t{1} << 34), kFormat, "IDX file '" << name << "': dimensions are too large");
    out.dims.push_back(v);
  }
  MIRROR_CHECK(bytes.size() - header == total, kFormat,
               "IDX file '" << name << "' holds " << bytes.size() - header << " data bytes; expected " << total
                            << " from its dimensions");
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

std::vector<uint8_t> read_maybe_gzipped(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  MIRROR_CHECK(std::filesystem::is_regular_file(path, ec), kIo, "file '" << path << "' does not exist");
  gzFile f = gzopen(path.c_str(), "rb");
  MIRROR_CHECK(f != nullptr, kIo, "cannot open '" << path << "' for reading");
  std::vector<uint8_t> out;
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int errnum = 0;
      const std::string msg = gzerror(f, &errnum);
      gzclose(f);
      MIRROR_THROW(kFormat, "cannot decompress '" << path << "': " << msg << "; expected a gzip or plain file");
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      gzclose(f);
      MIRROR_THROW(kFormat, "'" << path << "' decompresses to more than " << max_bytes << " bytes; expected less");
    }
    out.insert(out.end(), buf.begin(), buf.begin() + n);
  }
  gzclose(f);
  return out;
}

}  // namespace mirror::data
