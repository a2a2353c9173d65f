// zip_archive.h — ZipArchive (private): the members of a zip archive (an .npz is one: np.savez stores its
// members, np.savez_compressed deflates them) read as ByteStreams through libzip. libzip (Debian
// libzip-dev) was chosen over zlib's contrib minizip because it is a maintained library of its own that
// reads zip64 archives (numpy writes zip64 members), checks the archive's consistency on open
// (ZIP_CHECKCONS) and the CRC-32 of every member as it is read, and reports each failure as an error code
// with a message, so a corrupt or truncated archive is a clear error rather than wrong data.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "byte_stream.h"

struct zip;

namespace mirror::data {

class ZipArchive : public std::enable_shared_from_this<ZipArchive> {
 public:
  // Opens `path` read-only (create it with std::make_shared: streams keep their archive alive); throws kIo when it cannot be read, kFormat when it is not a (consistent) zip.
  explicit ZipArchive(const std::string& path);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  std::vector<std::string> members() const;
  bool has(const std::string& member) const;
  // A stream of the uncompressed bytes of `member`; throws kFormat when it is absent or cannot be read
  // (unsupported compression, encryption), and, while reading, when its data is corrupt (CRC mismatch).
  std::unique_ptr<ByteStream> open(const std::string& member) const;

 private:
  std::string path_;
  struct zip* zip_ = nullptr;
};

}  // namespace mirror::data
