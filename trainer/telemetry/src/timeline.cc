// timeline.cc — recording a rank's spans inside the step window.
#include "mirror/telemetry/timeline.h"

#include <charconv>

#include "mirror/error.h"

namespace mirror::telemetry {

TimelineWindow parse_timeline_steps(std::string_view text) {
  const auto colon = text.find(':');
  TimelineWindow w;
  auto number = [&](std::string_view part, std::int64_t& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && ec == std::errc() && end == part.data() + part.size() && out >= 0;
  };
  const bool ok = colon != std::string_view::npos && number(text.substr(0, colon), w.first) &&
                  number(text.substr(colon + 1), w.last) && w.first <= w.last;
  MIRROR_CHECK(ok, kInvalidArgument,
               "--timeline-steps must be A:B with 0 <= A <= B (steps A to B, both included), got '" << text << "'");
  return w;
}

const char* to_string(TimelineThread thread) {
  switch (thread) {
    case TimelineThread::kTrain: return "train";
    case TimelineThread::kLoader: return "loader";
    case TimelineThread::kCommunication: return "communication";
  }
  return "?";
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Timeline::begin_step(std::int64_t step) {
  step_.store(step, std::memory_order_relaxed);
  recording_.store(window_.contains(step), std::memory_order_relaxed);
}

void Timeline::add(std::string_view name, std::string_view category, std::int64_t start_ns, std::int64_t end_ns,
                   TimelineThread thread) {
  if (!recording()) return;
  MIRROR_CHECK(end_ns >= start_ns, kInvalidArgument,
               "timeline span '" << name << "' ends " << start_ns - end_ns << " ns before it starts");
  Span s{std::string(name), std::string(category), start_ns, end_ns - start_ns, thread,
         step_.load(std::memory_order_relaxed)};
  const std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back(std::move(s));
}

std::vector<Span> Timeline::spans() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return spans_;
}

Timeline::Scope::Scope(Timeline& timeline, std::string_view name, std::string_view category, TimelineThread thread)
    : timeline_(timeline.recording() ? &timeline : nullptr), name_(name), category_(category), thread_(thread) {
  if (timeline_) start_ = now_ns();
}

Timeline::Scope::~Scope() {
  if (!timeline_) return;
  try {  // destructors never throw; the only failure left here is running out of memory
    timeline_->add(name_, category_, start_, now_ns(), thread_);
  } catch (...) {
  }
}

}  // namespace mirror::telemetry
