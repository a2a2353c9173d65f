// npy.h — NumPy's .npy format (private), read as untrusted input: the header (magic "\x93NUMPY", version
// 1.0/2.0/3.0, a little-endian header length, then a Python dict literal {'descr': '<f8', 'fortran_order':
// False, 'shape': (N, ...)}, as specified in numpy/lib/format.py) is parsed by a real parser, then rows are
// read in blocks from the stream, byte-swapped when the file is big-endian. The data must be exactly
// prod(shape) * itemsize bytes: a short (truncated) or long stream is refused before any row is read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "array_source.h"
#include "byte_stream.h"

namespace mirror::data {

struct NpyHeader {
  ElemType type = ElemType::kFloat32;
  bool byte_swap = false;       // stored big-endian ('>'): swap every element on read
  bool fortran_order = false;
  std::vector<int64_t> shape;
  uint64_t header_bytes = 0;    // magic + length field + dict: where the data starts
};

// Parses the dict literal of a header (the part after the length field). `name` is used in messages.
// Throws kFormat for anything that is not a C-ordered numeric array: object arrays (ragged lists, pickles),
// strings, structured dtypes, complex numbers, dates; and for malformed text.
NpyHeader parse_npy_dict(const std::string& dict, const std::string& name);

// Reads and checks the header from `in`, leaving the stream at the first data byte; checks that the rest
// of the stream holds exactly the data the header promises. Throws kFormat naming `in.name()`.
NpyHeader read_npy_header(ByteStream& in);

// An ArraySource over a .npy stream (a file or an .npz member).
std::unique_ptr<ArraySource> open_npy(std::unique_ptr<ByteStream> in);

}  // namespace mirror::data
