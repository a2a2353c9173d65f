// tfrecord.cc — TFRecord framing: writing records with masked CRC-32C, reading them back with checks.
#include "mirror/telemetry/tfrecord.h"

#include <cerrno>
#include <cstring>

#include "mirror/error.h"
#include "mirror/telemetry/crc32c.h"

namespace mirror::telemetry {
namespace {

void put_le(unsigned char* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::uint64_t get_le(const unsigned char* in, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  return v;
}

}  // namespace

TfRecordWriter::TfRecordWriter(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wbx");  // x: fail if it exists
  MIRROR_CHECK(file_, kIo, "cannot create event file " << path_ << ": " << std::strerror(errno));
}

TfRecordWriter::~TfRecordWriter() {
  if (file_) std::fclose(file_);
}

void TfRecordWriter::write(std::string_view data) {
  unsigned char header[12];
  put_le(header, data.size(), 8);
  put_le(header + 8, masked_crc32c(header, 8), 4);
  unsigned char footer[4];
  put_le(footer, masked_crc32c(data.data(), data.size()), 4);
  const bool ok = std::fwrite(header, 1, sizeof(header), file_) == sizeof(header) &&
                  std::fwrite(data.data(), 1, data.size(), file_) == data.size() &&
                  std::fwrite(footer, 1, sizeof(footer), file_) == sizeof(footer);
  MIRROR_CHECK(ok, kIo, "cannot write a record of " << data.size() << " bytes to " << path_ << ": "
                                                    << std::strerror(errno));
}

void TfRecordWriter::flush() {
  MIRROR_CHECK(std::fflush(file_) == 0, kIo, "cannot flush " << path_ << ": " << std::strerror(errno));
}

TfRecordReader::TfRecordReader(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "rb");
  MIRROR_CHECK(file_, kIo, "cannot open " << path_ << ": " << std::strerror(errno));
}

TfRecordReader::~TfRecordReader() {
  if (file_) std::fclose(file_);
}

std::optional<std::string> TfRecordReader::next() {
  if (truncated_) return std::nullopt;
  unsigned char header[12];
  const std::size_t got = std::fread(header, 1, sizeof(header), file_);
  if (got == 0) return std::nullopt;
  if (got < sizeof(header)) {
    truncated_ = true;
    return std::nullopt;
  }
  MIRROR_CHECK(get_le(header + 8, 4) == masked_crc32c(header, 8), kFormat,
               path_ << ": the length of the record at byte " << offset_ << " fails its CRC-32C check");
  const std::uint64_t length = get_le(header, 8);
  std::string data;
  unsigned char footer[4];
  try {
    data.resize(length);
  } catch (const std::exception&) {
    MIRROR_THROW(kFormat, path_ << ": the record at byte " << offset_ << " claims " << length << " bytes");
  }
  if (std::fread(data.data(), 1, length, file_) != length || std::fread(footer, 1, 4, file_) != 4) {
    truncated_ = true;
    return std::nullopt;
  }
  MIRROR_CHECK(get_le(footer, 4) == masked_crc32c(data.data(), data.size()), kFormat,
               path_ << ": the data of the record at byte " << offset_ << " fails its CRC-32C check");
  offset_ += sizeof(header) + length + sizeof(footer);
  return data;
}

}  // namespace mirror::telemetry
