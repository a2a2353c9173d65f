// atomic_file.cc — atomic_file.h: temporary, fsync, rename, fsync of the directory.
#include "atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "mirror/error.h"

namespace mirror::train {
namespace {

void fsync_or_throw(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  MIRROR_CHECK(fd >= 0, kIo, "cannot open " << path << " to flush it: " << std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  MIRROR_CHECK(rc == 0, kIo, "fsync of " << path << " failed: " << std::strerror(err));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  const fs::path final_path(path);
  const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  const std::string tmp =
      (dir / ("." + final_path.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      MIRROR_CHECK(out.is_open(), kIo, "cannot create " << tmp << " (to write " << path << "): " << std::strerror(errno));
      write(out);
      out.flush();
      MIRROR_CHECK(out.good(), kIo, "writing " << tmp << " (for " << path << ") failed: disk full?");
    }
    fsync_or_throw(tmp, false);
    std::error_code ec;
    fs::rename(tmp, final_path, ec);
    MIRROR_CHECK(!ec, kIo, "cannot rename " << tmp << " to " << path << ": " << ec.message());
    fsync_or_throw(dir.string(), true);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

}  // namespace mirror::train
