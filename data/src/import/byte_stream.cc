// byte_stream.cc — the plain-file ByteStream (stdio, buffered).
#include "byte_stream.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mirror/error.h"

namespace mirror::data {

namespace {

class FileStream : public ByteStream {
 public:
  explicit FileStream(const std::string& path) : name_("'" + path + "'") {
    std::error_code ec;
    MIRROR_CHECK(std::filesystem::is_regular_file(path, ec), kIo, "input file '" << path << "' does not exist or is not a file");
    size_ = std::filesystem::file_size(path, ec);
    MIRROR_CHECK(!ec, kIo, "cannot read the size of '" << path << "': " << ec.message());
    file_ = std::fopen(path.c_str(), "rb");
    MIRROR_CHECK(file_ != nullptr, kIo, "cannot open '" << path << "' for reading: " << std::strerror(errno));
  }
  ~FileStream() override { std::fclose(file_); }
  std::size_t read(void* out, std::size_t n) override {
    const std::size_t got = std::fread(out, 1, n, file_);
    MIRROR_CHECK(got == n || !std::ferror(file_), kIo, "reading " << name_ << " failed: " << std::strerror(errno));
    return got;
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  uint64_t size_ = 0;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::unique_ptr<ByteStream> open_file_stream(const std::string& path) { return std::make_unique<FileStream>(path); }

}  // namespace mirror::data
