// byte_stream.h — ByteStream (private): a sequence of bytes read front to back, from a plain file or from a
// member of a zip archive (zip_archive.h), so that the NPY reader serves .npy files and .npz members alike.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace mirror::data {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to n bytes; returns fewer only at the end of the stream. Throws kIo/kFormat on a read error.
  virtual std::size_t read(void* out, std::size_t n) = 0;
  virtual uint64_t size() const = 0;                // total bytes of the stream
  virtual const std::string& name() const = 0;      // for messages: "'a.npy'" or "'a.npz' member 'x.npy'"
};

// A plain file; throws kIo naming the path when it cannot be opened.
std::unique_ptr<ByteStream> open_file_stream(const std::string& path);

}  // namespace mirror::data
