// mirror/telemetry/tensorboard_writer.h — scalar summaries in TensorBoard event files.
//
// A writer makes one new file `events.out.tfevents.<time>.<host>.<pid>` in its directory (created if
// missing). Its first record is an Event with file_version "brain.Event:2"; every add_scalar is one Event
// {wall_time, step, summary {value {tag, simple_value}}}, encoded by libprotobuf and framed as a TFRecord.
// Records are buffered; flush() hands them to the operating system (the trainer flushes after each epoch),
// as does destruction.
//
// Resume without duplicates: the directory's existing event files are read when the writer opens, and a
// scalar whose step is not after the last step already written for its tag, or not after
// options.start_after_step (the step a resumed run restarts from), is dropped. So TensorBoard sees every
// (tag, step) once, whatever the order of crash, checkpoint and resume. The new file's <time> is made later
// than every existing file's, so readers (which take files in name order) read it last.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mirror::telemetry {

class TfRecordWriter;

struct TensorBoardOptions {
  std::string dir;
  std::int64_t start_after_step = -1;  // drop scalars at steps <= this (-1: keep all)
};

// What the event files already in a directory hold: per tag, the last step written.
struct EventDirectoryState {
  std::map<std::string, std::int64_t, std::less<>> last_step;  // tag -> largest step seen
  std::int64_t newest_file_time = -1;                           // the largest <time> among the names
  int files = 0;
};
// Reads every file of `dir` whose name contains "tfevents" (TensorBoard's rule). A missing directory is
// empty. A file that is not a valid event file throws kFormat naming it (a cut-short last record is fine).
EventDirectoryState scan_event_directory(const std::string& dir);

// Every scalar in the event files of `dir`, file by file in name order (same rules as above).
struct ScalarEvent {
  std::string tag;
  std::int64_t step = 0;
  float value = 0.0f;
  double wall_time = 0.0;
};
std::vector<ScalarEvent> read_scalars(const std::string& dir);

class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const TensorBoardOptions& options);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Writes `value` for `tag` at `step` (wall_time: seconds since 1970, default now). Returns false when
  // the scalar was dropped (see above). An empty tag throws kInvalidArgument.
  bool add_scalar(std::string_view tag, std::int64_t step, float value, std::optional<double> wall_time = {});
  void flush();

  const std::string& path() const;  // the event file this writer writes
  std::int64_t written() const { return written_; }

 private:
  bool is_new(std::string_view tag, std::int64_t step) const;

  std::int64_t start_after_step_;
  EventDirectoryState existing_;
  std::unique_ptr<TfRecordWriter> file_;
  std::int64_t written_ = 0;
};

}  // namespace mirror::telemetry
