// test_timeline_mpi.cc — under mpirun: clock offsets measured against rank 0 and one merged trace file.
// Each rank's clock is skewed on purpose (rank r runs r x 7 s ahead), so the merged file only lines up if
// the measured offsets are applied. Every rank records known spans; rank 0 parses the file and checks one
// process track per rank with all of its events, exact durations, and that the span every rank records
// right after a barrier starts at about the same time on the merged axis.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "mirror/coll/communicator.h"
#include "mirror/telemetry/clock_offset.h"
#include "mirror/telemetry/timeline.h"
#include "mirror/telemetry/timeline_merge.h"

namespace mirror::telemetry {
namespace {

constexpr std::int64_t kSkewPerRank = 7'000'000'000;  // ns

std::unique_ptr<coll::Communicator> make_control() {
  coll::CommOptions o;
  o.timeout = std::chrono::seconds(60);
  return coll::make_communicator(o);
}

TEST(TimelineMpi, OffsetsUndoAKnownSkew) {
  auto comm = make_control();
  const int me = comm->rank();
  const ClockOffsets offsets = measure_clock_offsets(*comm, 8, [me] { return now_ns() + me * kSkewPerRank; });
  ASSERT_EQ(offsets.offset_ns.size(), static_cast<std::size_t>(comm->size()));
  EXPECT_EQ(offsets.offset_ns[0], 0);
  for (int r = 1; r < comm->size(); ++r) {
    // The same host's monotonic clock: the measured offset is the skew, within half the round trip.
    EXPECT_LE(std::llabs(offsets.offset_ns[r] + r * kSkewPerRank), offsets.rtt_ns[r] / 2 + 1) << "rank " << r;
    EXPECT_GT(offsets.rtt_ns[r], 0);
  }
}

TEST(TimelineMpi, OneMergedFileWithATrackPerRank) {
  auto comm = make_control();
  const int me = comm->rank(), n = comm->size();
  auto clock = [me] { return now_ns() + me * kSkewPerRank; };
  const ClockOffsets offsets = measure_clock_offsets(*comm, 8, clock);

  Timeline timeline(TimelineWindow{3, 4});
  const int spans_per_step = 2 + me;  // a different count on every rank
  for (std::int64_t step = 0; step < 6; ++step) {
    timeline.begin_step(step);
    for (int k = 0; k < spans_per_step; ++k) {
      const std::int64_t t = clock();
      timeline.add("work " + std::to_string(k), "compute", t, t + 1000 * (k + 1) + me,
                   k % 2 ? TimelineThread::kLoader : TimelineThread::kTrain);
    }
  }
  timeline.begin_step(4);
  comm->barrier();
  const std::int64_t after_barrier = clock();
  timeline.add("after barrier", "sync", after_barrier, after_barrier + 5, TimelineThread::kCommunication);

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mirror_test_timeline_mpi_" + std::to_string(n) + ".json")).string();
  if (me == 0) std::filesystem::remove(path);
  write_merged_timeline(timeline, offsets, *comm, path);
  comm->barrier();
  if (me != 0) return;

  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  const nlohmann::json j = nlohmann::json::parse(f);
  std::map<int, std::string> process_names;
  std::map<int, int> events_per_rank;
  std::map<int, double> barrier_ts;
  for (const auto& e : j.at("traceEvents")) {
    const int pid = e.at("pid");
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_names[pid] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    ++events_per_rank[pid];
    const std::string name = e.at("name");
    const std::int64_t step = e.at("args").at("step");
    EXPECT_TRUE(step == 3 || step == 4) << name << " of rank " << pid << " at step " << step;
    if (name == "after barrier") {
      barrier_ts[pid] = e.at("ts");
      EXPECT_EQ(e.at("tid"), 2);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 0.005);
    } else {
      const int k = std::stoi(name.substr(5));
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), (1000.0 * (k + 1) + pid) / 1000.0) << name << " rank " << pid;
      EXPECT_EQ(e.at("tid"), k % 2) << name;
      EXPECT_EQ(e.at("cat"), "compute");
    }
  }
  ASSERT_EQ(static_cast<int>(process_names.size()), n);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(process_names[r].rfind("rank " + std::to_string(r) + " (", 0), 0u) << process_names[r];
    EXPECT_EQ(events_per_rank[r], 2 * (2 + r) + 1) << "rank " << r;
    // Without the offsets these would be r x 7 s apart; a barrier's exits on one loaded host lie within
    // milliseconds (the bound is generous so that a busy machine does not fail it).
    EXPECT_LT(std::fabs(barrier_ts[r] - barrier_ts[0]), 50'000.0) << "rank " << r << " us after rank 0";
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mirror::telemetry
