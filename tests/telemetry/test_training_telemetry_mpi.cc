// test_training_telemetry_mpi.cc — under mpirun: the training loop's telemetry object. train/loss every K
// steps is the mean over all ranks' samples of the steps since the last write (checked against a serial
// sum of the known per-rank losses), train/lr and the epoch scalars land at their global steps, a resumed
// object adds a file without repeating a (tag, step), and the merged timeline has every rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "mirror/coll/communicator.h"
#include "mirror/telemetry/tensorboard_writer.h"
#include "mirror/telemetry/training_telemetry.h"

namespace mirror::telemetry {
namespace {

std::unique_ptr<coll::Communicator> make_control() {
  coll::CommOptions o;
  o.timeout = std::chrono::seconds(60);
  return coll::make_communicator(o);
}

// Rank r's loss sum and sample count at step s (known to every rank, so the test can sum them itself).
double loss_sum(int r, std::int64_t s) { return 0.25 * (r + 1) + 0.01 * static_cast<double>(s); }
std::int64_t samples(int r) { return 3 + r; }

std::filesystem::path shared_dir(coll::Communicator& comm, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("mirror_test_training_telemetry_" + name + "_np" + std::to_string(comm.size()));
  if (comm.rank() == 0) std::filesystem::remove_all(dir);
  comm.barrier();
  return dir;
}

void run_steps(TrainingTelemetry& t, int rank, std::int64_t from, std::int64_t to) {
  for (std::int64_t s = from + 1; s <= to; ++s) {
    t.timeline().begin_step(s);
    t.timeline().add("step", "compute", 1000 * s, 1000 * s + 10);
    t.after_step(s, loss_sum(rank, s), samples(rank), 0.001 * static_cast<double>(s));
    if (s % 6 == 0) t.epoch(s, {{"epoch/train_loss", 1.0 / static_cast<double>(s)}});
  }
}

TEST(TrainingTelemetryMpi, StepAndEpochScalarsResumeAndTimeline) {
  auto comm = make_control();
  const int n = comm->size(), me = comm->rank();
  const auto dir = shared_dir(*comm, "tb");
  TrainingTelemetryOptions o;
  o.tensorboard_dir = dir.string();
  o.tensorboard_every = 4;
  o.timeline_path = (dir / "trace.json").string();
  o.timeline_steps = {9, 11};
  {
    TrainingTelemetry t(o, *comm, 0);
    EXPECT_EQ(t.event_file().empty(), me != 0);
    run_steps(t, me, 0, 13);  // an interrupted run: up to step 13
    t.finish();
  }
  {
    TrainingTelemetry t(o, *comm, 8);  // resumed from a checkpoint at step 8
    run_steps(t, me, 8, 20);
    t.finish();
  }
  comm->barrier();
  if (me != 0) return;

  std::map<std::string, std::map<std::int64_t, std::vector<float>>> seen;
  for (const ScalarEvent& e : read_scalars(dir.string())) seen[e.tag][e.step].push_back(e.value);
  // train/loss at 4, 8, 12 from the first run; 16, 20 from the second (its 12 is already there). The second
  // run's first window is steps 9..12 (dropped), so its value at 16 covers 13..16.
  auto mean_loss = [&](std::int64_t from, std::int64_t to) {
    double sum = 0.0, count = 0.0;
    for (std::int64_t s = from; s <= to; ++s)
      for (int r = 0; r < n; ++r) {
        sum += loss_sum(r, s);
        count += static_cast<double>(samples(r));
      }
    return static_cast<float>(sum / count);
  };
  const std::map<std::int64_t, float> want_loss = {
      {4, mean_loss(1, 4)}, {8, mean_loss(5, 8)}, {12, mean_loss(9, 12)}, {16, mean_loss(13, 16)}, {20, mean_loss(17, 20)}};
  ASSERT_EQ(seen["train/loss"].size(), want_loss.size());
  for (const auto& [step, value] : want_loss) {
    ASSERT_EQ(seen["train/loss"][step].size(), 1u) << "step " << step << " written more than once";
    EXPECT_EQ(seen["train/loss"][step][0], value) << "step " << step;
    EXPECT_EQ(seen["train/lr"][step].at(0), static_cast<float>(0.001 * static_cast<double>(step)));
  }
  EXPECT_EQ(seen["epoch/train_loss"].size(), 3u);  // 6, 12, 18: each once
  for (std::int64_t step : {6, 12, 18}) EXPECT_EQ(seen["epoch/train_loss"][step].size(), 1u) << step;

  std::ifstream f(o.timeline_path);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::map<int, int> per_rank;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") ++per_rank[e.at("pid").get<int>()];
  for (int r = 0; r < n; ++r) EXPECT_EQ(per_rank[r], 3) << "rank " << r;  // steps 9..11 of the second run
}

}  // namespace
}  // namespace mirror::telemetry
