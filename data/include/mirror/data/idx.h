// mirror/data/idx.h — the IDX format of (Fashion-)MNIST (http://yann.lecun.com/exdb/mnist/), parsed as an
// untrusted input: magic, element type, dimension count, dimensions and exact length are all checked.
// Files may be gzipped (decompressed with zlib) or plain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mirror::data {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28} or {60000}
  std::vector<uint8_t> data;  // product(dims) bytes, row-major
};

// Parses an IDX byte stream holding unsigned bytes (type 0x08) with `expected_ndims` dimensions.
// `name` is used in messages. Throws kFormat naming what is wrong.
IdxArray parse_idx(const std::vector<uint8_t>& bytes, int expected_ndims, const std::string& name);

// Reads and decompresses (gzip or plain) a file of at most max_bytes decompressed bytes. Throws kIo/kFormat.
std::vector<uint8_t> read_maybe_gzipped(const std::string& path, std::size_t max_bytes = std::size_t{1} << 30);

}  // namespace mirror::data
