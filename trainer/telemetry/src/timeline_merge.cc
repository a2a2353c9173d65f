// timeline_merge.cc — gathering every rank's spans to rank 0 (sizes by all-gather, bytes by one broadcast
// per rank) and writing the merged trace atomically.
#include "mirror/telemetry/timeline_merge.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "host_name.h"
#include "mirror/error.h"

namespace mirror::telemetry {
namespace {

// CBOR of {host, spans: [[name, category, start_ns, duration_ns, thread, step], ...]}.
std::vector<std::uint8_t> encode(const std::string& host, const std::vector<Span>& spans) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Span& s : spans)
    rows.push_back({s.name, s.category, s.start_ns, s.duration_ns, static_cast<int>(s.thread), s.step});
  return nlohmann::json::to_cbor(nlohmann::json{{"host", host}, {"spans", std::move(rows)}});
}

RankTrack decode(int rank, std::int64_t offset, const std::uint8_t* bytes, std::size_t size) {
  const nlohmann::json j = nlohmann::json::from_cbor(bytes, bytes + size);
  RankTrack track{rank, j.at("host").get<std::string>(), offset, {}};
  for (const auto& row : j.at("spans")) {
    track.spans.push_back(Span{row.at(0).get<std::string>(), row.at(1).get<std::string>(), row.at(2).get<std::int64_t>(),
                               row.at(3).get<std::int64_t>(), static_cast<TimelineThread>(row.at(4).get<int>()),
                               row.at(5).get<std::int64_t>()});
  }
  return track;
}

// Bytes travel as int32 words (the Communicator's smallest type); `bytes` is the length without padding.
std::vector<std::int32_t> to_words(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::int32_t> words((bytes.size() + 3) / 4, 0);
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  MIRROR_CHECK(!ec, kIo, "cannot create directory " << parent.string() << " for " << path << ": " << ec.message());
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc | std::ios::binary);
    f << text;
    f.flush();
    MIRROR_CHECK(f.good(), kIo, "cannot write " << tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp);
  MIRROR_CHECK(!ec, kIo, "cannot rename " << tmp << " to " << path << ": " << ec.message());
}

void write_merged_timeline(const Timeline& timeline, const ClockOffsets& offsets, coll::Communicator& comm,
                           const std::string& path) {
  const int n = comm.size(), me = comm.rank();
  MIRROR_CHECK(static_cast<int>(offsets.offset_ns.size()) == n, kInvalidArgument,
               "clock offsets for " << offsets.offset_ns.size() << " ranks, but the communicator has " << n);
  const std::vector<std::uint8_t> mine = encode(host_name(), timeline.spans());
  std::vector<std::int64_t> sizes(n, 0);
  sizes[me] = static_cast<std::int64_t>(mine.size());
  comm.allgather(&sizes[me], sizes.data(), 1, coll::DataType::kInt64);

  std::vector<RankTrack> tracks;
  if (me == 0) tracks.push_back(decode(0, offsets.offset_ns[0], mine.data(), mine.size()));
  for (int r = 1; r < n; ++r) {
    std::vector<std::int32_t> words = me == r ? to_words(mine) : std::vector<std::int32_t>((sizes[r] + 3) / 4);
    comm.broadcast(words.data(), words.size(), coll::DataType::kInt32, r);
    if (me == 0)
      tracks.push_back(decode(r, offsets.offset_ns[r], reinterpret_cast<const std::uint8_t*>(words.data()),
                              static_cast<std::size_t>(sizes[r])));
  }
  if (me == 0) write_file_atomically(path, chrome_trace_json(tracks));
}

}  // namespace mirror::telemetry
