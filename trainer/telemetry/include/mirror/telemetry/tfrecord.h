// mirror/telemetry/tfrecord.h — TFRecord files: the record framing of TensorBoard event files.
// Each record: uint64 length, uint32 masked CRC-32C of those 8 bytes, the data, uint32 masked CRC-32C of
// the data; all little-endian, records concatenated (docs/telemetry.md cites the format).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace mirror::telemetry {

// Appends records to a new file. The file must not exist yet (kIo otherwise: an event file is never
// overwritten). Records reach the operating system on flush() and on destruction.
class TfRecordWriter {
 public:
  explicit TfRecordWriter(std::string path);
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  void write(std::string_view data);
  void flush();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Reads the records of a file in order, checking both CRCs of each. A record cut short at the end of the
// file (a writer killed mid-record) ends the reading quietly with truncated() true; a CRC that does not
// match throws kFormat naming the file and the record's offset.
class TfRecordReader {
 public:
  explicit TfRecordReader(std::string path);
  ~TfRecordReader();
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  std::optional<std::string> next();
  bool truncated() const { return truncated_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::uint64_t offset_ = 0;
  bool truncated_ = false;
};

}  // namespace mirror::telemetry
