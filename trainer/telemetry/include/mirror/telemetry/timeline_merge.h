// mirror/telemetry/timeline_merge.h — every rank's spans in one Chrome trace-event JSON file.
//
// The file: {"traceEvents": [...], "displayTimeUnit": "ms"}. Each span is a complete event
// {"ph": "X", "name", "cat", "ts", "dur", "pid": rank, "tid": thread, "args": {"step"}} with ts and dur in
// microseconds; ts is on rank 0's clock (the span's start plus its rank's offset), counted from the earliest
// span of the file. Metadata events ("ph": "M") name each rank's process ("rank r (host)"), order the
// processes by rank, and name the threads (train, loader, communication). Open it in ui.perfetto.dev or
// chrome://tracing: one process track per rank.
//
// Gathering: every rank encodes its spans (CBOR); an all-gather of the sizes, then one broadcast per rank
// r > 0 rooted at r moves rank r's bytes to rank 0 (the Communicator has no gatherv, and a padded all-gather
// would hold size x the largest part on every rank; a broadcast holds one part at a time). Rank 0 writes
// the file through a temporary name and a rename, so it is whole or absent.
#pragma once

#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/telemetry/clock_offset.h"
#include "mirror/telemetry/timeline.h"

namespace mirror::telemetry {

struct RankTrack {
  int rank = 0;
  std::string host;
  std::int64_t offset_ns = 0;  // added to each span's start
  std::vector<Span> spans;
};

std::string chrome_trace_json(const std::vector<RankTrack>& tracks);

// Collective over `comm`, a host-backend communicator (the control one: buffers are host memory); every
// rank calls it once, at the end; rank 0 writes `path`.
void write_merged_timeline(const Timeline& timeline, const ClockOffsets& offsets, coll::Communicator& comm,
                           const std::string& path);

// `text` to `path` via `path`.tmp.<pid> and a rename (the parent directory is created).
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace mirror::telemetry
