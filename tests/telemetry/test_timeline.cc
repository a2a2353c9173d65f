// test_timeline.cc — the step window, the recorder (threads, scopes) and the Chrome trace-event JSON,
// parsed back with nlohmann-json and compared with what was recorded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "mirror/error.h"
#include "mirror/telemetry/timeline.h"
#include "mirror/telemetry/timeline_merge.h"

namespace mirror::telemetry {
namespace {

TEST(TimelineSteps, ParsesAToBBothIncluded) {
  const TimelineWindow w = parse_timeline_steps("10:20");
  EXPECT_EQ(w.first, 10);
  EXPECT_EQ(w.last, 20);
  EXPECT_TRUE(w.contains(10));
  EXPECT_TRUE(w.contains(20));
  EXPECT_FALSE(w.contains(9));
  EXPECT_FALSE(w.contains(21));
  EXPECT_TRUE(parse_timeline_steps("0:0").contains(0));
  EXPECT_TRUE(TimelineWindow{}.empty());
}

TEST(TimelineSteps, RefusesAnythingElseSayingWhatIsExpected) {
  for (const char* bad : {"", "5", "5:", ":5", "7:3", "-1:4", "a:b", "1:2:3", "1 :2", "1:2x"}) {
    try {
      parse_timeline_steps(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(e.message().find("A:B"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("'" + std::string(bad) + "'"), std::string::npos) << e.message();
    }
  }
}

TEST(Timeline, KeepsOnlySpansOfStepsInTheWindow) {
  Timeline t(TimelineWindow{2, 3});
  for (std::int64_t step = 0; step < 6; ++step) {
    t.begin_step(step);
    t.add("forward", "compute", 100 * step, 100 * step + 40);
  }
  const std::vector<Span> spans = t.spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].step, 2);
  EXPECT_EQ(spans[0].start_ns, 200);
  EXPECT_EQ(spans[0].duration_ns, 40);
  EXPECT_EQ(spans[1].step, 3);
  Timeline on(TimelineWindow{0, 0});
  on.begin_step(0);
  EXPECT_THROW(on.add("x", "y", 10, 5), Error);  // ends before it starts
}

TEST(Timeline, ADefaultTimelineRecordsNothing) {
  Timeline t;
  t.begin_step(0);
  t.add("forward", "compute", 0, 1);
  { Timeline::Scope s(t, "backward", "compute"); }
  EXPECT_TRUE(t.spans().empty());
}

TEST(Timeline, ScopesAndOtherThreadsRecord) {
  Timeline t(TimelineWindow{0, 10});
  t.begin_step(1);
  const std::int64_t before = now_ns();
  { Timeline::Scope s(t, "backward", "compute"); }
  std::thread loader([&] {
    for (int i = 0; i < 500; ++i) t.add("read", "data", i, i + 1, TimelineThread::kLoader);
  });
  std::thread comm([&] {
    for (int i = 0; i < 500; ++i) t.add("allreduce", "communication", i, i + 2, TimelineThread::kCommunication);
  });
  loader.join();
  comm.join();
  const std::vector<Span> spans = t.spans();
  ASSERT_EQ(spans.size(), 1001u);
  EXPECT_EQ(spans[0].name, "backward");
  EXPECT_GE(spans[0].start_ns, before);
  std::map<TimelineThread, int> per_thread;
  for (const Span& s : spans) ++per_thread[s.thread];
  EXPECT_EQ(per_thread[TimelineThread::kLoader], 500);
  EXPECT_EQ(per_thread[TimelineThread::kCommunication], 500);
}

// Two ranks' tracks with known spans and offsets: every field of the JSON against them.
TEST(ChromeTrace, EventsMetadataAndOffsetsAsRecorded) {
  RankTrack r0{0, "hostA", 0, {{"forward", "compute", 5'000'000, 1'500, TimelineThread::kTrain, 7},
                               {"read batch", "data", 5'100'000, 250'000, TimelineThread::kLoader, 7}}};
  RankTrack r1{1, "hostB", -1'000'000'000,
               {{"allreduce bucket 0", "communication", 1'004'000'000, 3'000'001, TimelineThread::kCommunication, 8}}};
  const nlohmann::json j = nlohmann::json::parse(chrome_trace_json({r0, r1}));
  ASSERT_TRUE(j.at("traceEvents").is_array());
  std::vector<nlohmann::json> complete;
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "X") complete.push_back(e);
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_names[e.at("pid")] = e.at("args").at("name");
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      thread_names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "rank 0 (hostA)"}, {1, "rank 1 (hostB)"}}));
  EXPECT_EQ(thread_names.at({0, 0}), "train");
  EXPECT_EQ(thread_names.at({0, 1}), "loader");
  EXPECT_EQ(thread_names.at({1, 2}), "communication");
  ASSERT_EQ(complete.size(), 3u);
  // The earliest aligned start is rank 1's: 1'004'000'000 - 1'000'000'000 = 4'000'000 ns -> ts 0.
  const auto& fwd = complete[0];
  EXPECT_EQ(fwd.at("name"), "forward");
  EXPECT_EQ(fwd.at("cat"), "compute");
  EXPECT_EQ(fwd.at("pid"), 0);
  EXPECT_EQ(fwd.at("tid"), 0);
  EXPECT_DOUBLE_EQ(fwd.at("ts").get<double>(), 1000.0);  // (5'000'000 - 4'000'000) ns in us
  EXPECT_DOUBLE_EQ(fwd.at("dur").get<double>(), 1.5);
  EXPECT_EQ(fwd.at("args").at("step"), 7);
  EXPECT_EQ(complete[1].at("tid"), 1);
  EXPECT_DOUBLE_EQ(complete[1].at("ts").get<double>(), 1100.0);
  EXPECT_DOUBLE_EQ(complete[1].at("dur").get<double>(), 250.0);
  const auto& ar = complete[2];
  EXPECT_EQ(ar.at("pid"), 1);
  EXPECT_EQ(ar.at("tid"), 2);
  EXPECT_EQ(ar.at("name"), "allreduce bucket 0");
  EXPECT_DOUBLE_EQ(ar.at("ts").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(ar.at("dur").get<double>(), 3000.001);
}

TEST(ChromeTrace, WrittenAtomicallyOrNotAtAll) {
  const auto dir = std::filesystem::temp_directory_path() / ("mirror_test_timeline_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "sub" / "trace.json").string();
  write_file_atomically(path, "{}\n");
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{}\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "sub"), {}), 1);  // no temporary left
  std::filesystem::create_directories(dir / "isdir");  // renaming onto a non-empty directory fails
  std::ofstream(dir / "isdir" / "x") << "x";
  EXPECT_THROW(write_file_atomically((dir / "isdir").string(), "{}"), Error);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 2);  // sub, isdir: no temporary
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mirror::telemetry
