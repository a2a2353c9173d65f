// timeline_json.cc — spans of every rank as Chrome trace-event JSON (complete and metadata events).
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "mirror/telemetry/timeline_merge.h"

namespace mirror::telemetry {
namespace {

using Json = nlohmann::ordered_json;

Json metadata(const char* what, int pid, int tid, Json args) {
  return Json{{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

std::int64_t earliest_start(const std::vector<RankTrack>& tracks) {
  std::int64_t t = std::numeric_limits<std::int64_t>::max();
  for (const RankTrack& track : tracks)
    for (const Span& s : track.spans) t = std::min(t, s.start_ns + track.offset_ns);
  return t == std::numeric_limits<std::int64_t>::max() ? 0 : t;
}

}  // namespace

std::string chrome_trace_json(const std::vector<RankTrack>& tracks) {
  const std::int64_t origin = earliest_start(tracks);
  Json events = Json::array();
  for (const RankTrack& track : tracks) {
    const int pid = track.rank;
    events.push_back(metadata("process_name", pid, 0, {{"name", "rank " + std::to_string(pid) + " (" + track.host + ")"}}));
    events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
    std::set<int> threads;
    for (const Span& s : track.spans) threads.insert(static_cast<int>(s.thread));
    for (const int tid : threads)
      events.push_back(metadata("thread_name", pid, tid, {{"name", to_string(static_cast<TimelineThread>(tid))}}));
    for (const Span& s : track.spans) {
      events.push_back(Json{{"name", s.name},
                            {"cat", s.category},
                            {"ph", "X"},
                            {"ts", static_cast<double>(s.start_ns + track.offset_ns - origin) / 1000.0},
                            {"dur", static_cast<double>(s.duration_ns) / 1000.0},
                            {"pid", pid},
                            {"tid", static_cast<int>(s.thread)},
                            {"args", {{"step", s.step}}}});
    }
  }
  return Json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace mirror::telemetry
