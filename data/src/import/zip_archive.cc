// zip_archive.cc — ZipArchive over libzip: open with consistency checks, member lookup, member streams.
#include "zip_archive.h"

#include <zip.h>

#include <filesystem>

#include "mirror/error.h"

namespace mirror::data {

namespace {

std::string zip_error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string text = zip_error_strerror(&e);
  zip_error_fini(&e);
  return text;
}

class MemberStream : public ByteStream {
 public:
  MemberStream(std::shared_ptr<const ZipArchive> archive, zip_file_t* file, uint64_t size, std::string name)
      : archive_(std::move(archive)), file_(file), size_(size), name_(std::move(name)) {}
  ~MemberStream() override { zip_fclose(file_); }
  std::size_t read(void* out, std::size_t n) override {
    std::size_t done = 0;
    while (done < n) {
      const zip_int64_t got = zip_fread(file_, static_cast<char*>(out) + done, n - done);
      MIRROR_CHECK(got >= 0, kFormat, "reading " << name_ << " failed: " << zip_file_strerror(file_)
                                                 << " (corrupt or truncated archive?)");
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<const ZipArchive> archive_;  // closed after this member
  zip_file_t* file_;
  uint64_t size_;
  std::string name_;
};

}  // namespace

ZipArchive::ZipArchive(const std::string& path) : path_(path) {
  std::error_code ec;
  MIRROR_CHECK(std::filesystem::is_regular_file(path, ec), kIo, "input file '" << path << "' does not exist or is not a file");
  int code = 0;
  zip_ = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!zip_) {
    const bool io = code == ZIP_ER_OPEN || code == ZIP_ER_READ || code == ZIP_ER_NOENT;
    if (io) MIRROR_THROW(kIo, "cannot read '" << path << "': " << zip_error_text(code));
    MIRROR_THROW(kFormat, "'" << path << "' is not a readable zip archive (" << zip_error_text(code)
                              << "); expected an .npz written by np.savez or np.savez_compressed (truncated or corrupt?)");
  }
}

ZipArchive::~ZipArchive() { zip_discard(zip_); }

std::vector<std::string> ZipArchive::members() const {
  std::vector<std::string> out;
  const zip_int64_t n = zip_get_num_entries(zip_, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    if (const char* name = zip_get_name(zip_, static_cast<zip_uint64_t>(i), 0)) out.emplace_back(name);
  }
  return out;
}

bool ZipArchive::has(const std::string& member) const { return zip_name_locate(zip_, member.c_str(), 0) >= 0; }

std::unique_ptr<ByteStream> ZipArchive::open(const std::string& member) const {
  const std::string name = "'" + path_ + "' member '" + member + "'";
  const zip_int64_t index = zip_name_locate(zip_, member.c_str(), 0);
  MIRROR_CHECK(index >= 0, kFormat, name << " does not exist");
  zip_stat_t st;
  zip_stat_init(&st);
  MIRROR_CHECK(zip_stat_index(zip_, static_cast<zip_uint64_t>(index), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE), kFormat,
               "cannot read the size of " << name << ": " << zip_strerror(zip_));
  zip_file_t* file = zip_fopen_index(zip_, static_cast<zip_uint64_t>(index), 0);
  MIRROR_CHECK(file != nullptr, kFormat, "cannot open " << name << ": " << zip_strerror(zip_)
                                                        << " (expected a stored or deflated member)");
  return std::make_unique<MemberStream>(shared_from_this(), file, st.size, name);
}

}  // namespace mirror::data
