// mirror/telemetry/timeline.h — a rank's spans (what ran, from when, for how long, on which thread) over a
// bounded window of training steps, for one Chrome trace-event file merged over all ranks
// (timeline_merge.h) and opened in ui.perfetto.dev or chrome://tracing.
//
// Times are nanoseconds of this rank's steady clock (CLOCK_MONOTONIC, now_ns()); the merge adds each rank's
// offset against rank 0 (clock_offset.h). add() is thread-safe: the loader and communication threads record
// too. Spans are kept only while the current step (begin_step) is inside the window: a window of a few
// hundred steps keeps the file small whatever the run's length.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace mirror::telemetry {

// Steps first..last, both included; empty() records nothing.
struct TimelineWindow {
  std::int64_t first = 0;
  std::int64_t last = -1;
  bool empty() const { return last < first; }
  bool contains(std::int64_t step) const { return step >= first && step <= last; }
};
// "A:B" (0 <= A <= B) -> steps A..B; anything else throws kInvalidArgument saying what is expected.
TimelineWindow parse_timeline_steps(std::string_view text);

// The track (trace-event tid) a span lies on, and its name in the file.
enum class TimelineThread : int { kTrain = 0, kLoader = 1, kCommunication = 2 };
const char* to_string(TimelineThread thread);  // "train", "loader", "communication"

struct Span {
  std::string name;      // "forward", "allreduce bucket 3", ...
  std::string category;  // "compute", "data", "communication", "optimizer", "checkpoint", "evaluation"
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  TimelineThread thread = TimelineThread::kTrain;
  std::int64_t step = -1;  // the step it belongs to
};

std::int64_t now_ns();  // this rank's steady clock

class Timeline {
 public:
  Timeline() = default;  // records nothing
  explicit Timeline(TimelineWindow window) : window_(window) {}

  // The step now starting; spans recorded until the next call belong to it.
  void begin_step(std::int64_t step);
  bool recording() const { return recording_.load(std::memory_order_relaxed); }

  // Keeps [start_ns, end_ns) while recording; end before start throws kInvalidArgument.
  void add(std::string_view name, std::string_view category, std::int64_t start_ns, std::int64_t end_ns,
           TimelineThread thread = TimelineThread::kTrain);

  // RAII: a span from construction to destruction (nothing when not recording at construction).
  class Scope {
   public:
    Scope(Timeline& timeline, std::string_view name, std::string_view category,
          TimelineThread thread = TimelineThread::kTrain);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Timeline* timeline_;
    std::string_view name_, category_;
    TimelineThread thread_;
    std::int64_t start_ = 0;
  };

  std::vector<Span> spans() const;  // a copy, in recording order
  const TimelineWindow& window() const { return window_; }

 private:
  TimelineWindow window_;
  std::atomic<bool> recording_{false};
  std::atomic<std::int64_t> step_{-1};
  mutable std::mutex mutex_;
  std::vector<Span> spans_;
};

}  // namespace mirror::telemetry
