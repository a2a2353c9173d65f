// test_data_mpi.cc — the reader under mpirun (np 1..4) on a real file: rank 0 writes it into a temporary
// directory, every rank reads its own part, writes what it read to a per-rank file, and every rank then
// checks all ranks' results together: the step slices of N ranks concatenated equal one rank's batch of
// N*B, an epoch covers each sample at most once, files sharding stays on its own shards, and evaluation
// covers each sample exactly once. The data library takes rank and size as plain ints; MPI is used here
// only for them and for barriers (collectives' agree_exit_code, an all-ranks maximum). Ranks share /tmp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "mirror/coll/runtime.h"
#include "mirror/data/loader.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using coll::MpiRuntime;

int max_over_ranks(int v) { return coll::agree_exit_code(v); }
void barrier() { max_over_ranks(0); }

constexpr int64_t kTrain = 203, kTest = 37, kFeatures = 5, kClasses = 7, kShards = 4, kBatch = 6;

// A directory every rank agrees on: named after rank 0's pid, made by rank 0.
class SharedDir {
 public:
  SharedDir() {
    const int pid = max_over_ranks(MpiRuntime::world_rank() == 0 ? static_cast<int>(getpid()) : 0);
    path_ = "/tmp/mirror-data-mpi-" + std::to_string(pid);
    if (MpiRuntime::world_rank() == 0) {
      std::filesystem::remove_all(path_);
      std::filesystem::create_directories(path_);
    }
    barrier();
  }
  ~SharedDir() {
    barrier();
    if (MpiRuntime::world_rank() == 0) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Rank 0 writes the id dataset; every rank opens it after a barrier.
std::string write_shared_dataset(const SharedDir& dir) {
  const std::string path = dir.file("ids.h5");
  if (MpiRuntime::world_rank() == 0) {
    test::IdSpec spec;
    spec.train = kTrain;
    spec.test = kTest;
    spec.features = kFeatures;
    spec.classes = kClasses;
    spec.shards = kShards;
    spec.chunk_samples = 16;
    test::write_id_dataset(path, spec);
  }
  barrier();
  return path;
}

// One line per batch: "epoch step i0 i1 ...". Rows are checked against the id formula while reading.
using Lines = std::vector<std::vector<int64_t>>;

void write_lines(const std::string& path, const Lines& lines) {
  std::ofstream out(path);
  for (const auto& l : lines) {
    for (std::size_t k = 0; k < l.size(); ++k) out << (k ? " " : "") << l[k];
    out << "\n";
  }
}

Lines read_lines(const std::string& path) {
  Lines lines;
  std::ifstream in(path);
  std::string s;
  while (std::getline(in, s)) {
    std::istringstream is(s);
    std::vector<int64_t> l;
    int64_t v;
    while (is >> v) l.push_back(v);
    lines.push_back(l);
  }
  return lines;
}

void check_batch_rows(const Batch& b, int split) {
  for (int64_t k = 0; k < b.size; ++k) {
    const int64_t i = b.indices[static_cast<std::size_t>(k)];
    EXPECT_EQ(b.y[static_cast<std::size_t>(k)], test::label_of(i, kClasses));
    EXPECT_EQ(b.x[static_cast<std::size_t>(k * kFeatures)], test::float_value(i, 0, split));
    EXPECT_EQ(b.x[static_cast<std::size_t>(k * kFeatures + kFeatures - 1)], test::float_value(i, kFeatures - 1, split));
  }
}

// Runs epochs 0 and 1 on this rank and returns its batches as lines.
Lines run_train(const Dataset& ds, const LoaderOptions& lo) {
  const int world = MpiRuntime::world_size(), rank = MpiRuntime::world_rank();
  TrainLoader loader(ds, SamplerOptions{2024, world, rank, kBatch, 0}, lo);
  Lines lines;
  for (int64_t epoch : {0, 1}) {
    loader.start_epoch(epoch);
    Batch b;
    while (loader.next(b)) {
      check_batch_rows(b, 0);
      std::vector<int64_t> l{epoch, b.step};
      l.insert(l.end(), b.indices.begin(), b.indices.end());
      lines.push_back(l);
    }
  }
  return lines;
}

// Exchanges every rank's lines through the shared directory.
std::vector<Lines> exchange(const SharedDir& dir, const std::string& tag, const Lines& mine) {
  const int world = MpiRuntime::world_size(), rank = MpiRuntime::world_rank();
  write_lines(dir.file(tag + "-" + std::to_string(rank) + ".txt"), mine);
  barrier();
  std::vector<Lines> all;
  for (int r = 0; r < world; ++r) all.push_back(read_lines(dir.file(tag + "-" + std::to_string(r) + ".txt")));
  return all;
}

TEST(DataMpi, IndexShardingEqualsOneRankWithWholeGlobalBatch) {
  SharedDir dir;
  const Dataset ds = Dataset::open(write_shared_dataset(dir));
  const int world = MpiRuntime::world_size();
  const int64_t steps = kTrain / (world * kBatch);
  const Sampler one(SamplerOptions{2024, 1, 0, world * kBatch, kTrain});
  for (bool in_memory : {true, false}) {
    LoaderOptions lo;
    lo.in_memory = in_memory;
    lo.prefetch_depth = 2;
    const auto all = exchange(dir, in_memory ? "mem" : "h5", run_train(ds, lo));
    for (int64_t epoch : {0, 1}) {
      std::set<int64_t> seen;
      int64_t total = 0;
      for (int64_t t = 0; t < steps; ++t) {
        std::vector<int64_t> concat;
        for (const Lines& rank_lines : all) {
          const auto& l = rank_lines.at(static_cast<std::size_t>(epoch * steps + t));
          ASSERT_EQ(l[0], epoch);
          ASSERT_EQ(l[1], t);
          concat.insert(concat.end(), l.begin() + 2, l.end());
        }
        EXPECT_EQ(concat, one.indices(epoch, t)) << "epoch " << epoch << " step " << t;
        for (int64_t i : concat) {
          EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " twice in epoch " << epoch;
          EXPECT_LT(i, kTrain);
        }
        total += static_cast<int64_t>(concat.size());
      }
      EXPECT_EQ(total, steps * world * kBatch);
    }
    for (const Lines& rank_lines : all) EXPECT_EQ(static_cast<int64_t>(rank_lines.size()), 2 * steps);
  }
}

TEST(DataMpi, FilesShardingIsDisjointAndStaysOnOwnShards) {
  SharedDir dir;
  const Dataset ds = Dataset::open(write_shared_dataset(dir));
  const int world = MpiRuntime::world_size();
  LoaderOptions lo;
  lo.sharding = Sharding::kFiles;
  lo.shuffle_buffer = 32;
  const auto all = exchange(dir, "files", run_train(ds, lo));
  // Shard s holds [s*N/K, (s+1)*N/K); rank r owns shards s with s % W == r.
  int64_t fewest = -1;
  for (int r = 0; r < world; ++r) {
    int64_t n = 0;
    for (int64_t s = r; s < kShards; s += world) n += kTrain * (s + 1) / kShards - kTrain * s / kShards;
    fewest = fewest < 0 ? n : std::min(fewest, n);
  }
  const int64_t steps = fewest / kBatch;
  for (int64_t epoch : {0, 1}) {
    std::set<int64_t> seen;
    for (int r = 0; r < world; ++r) {
      int64_t lines = 0;
      for (const auto& l : all[static_cast<std::size_t>(r)]) {
        if (l[0] != epoch) continue;
        ++lines;
        for (std::size_t k = 2; k < l.size(); ++k) {
          const int64_t i = l[k];
          int64_t shard = 0;
          while (i >= kTrain * (shard + 1) / kShards) ++shard;
          EXPECT_EQ(shard % world, r) << "rank " << r << " read sample " << i << " of shard " << shard;
          EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " twice";
        }
      }
      EXPECT_EQ(lines, steps) << "rank " << r;
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), steps * kBatch * world);
  }
}

TEST(DataMpi, EvaluationCoversEverySampleExactlyOnce) {
  SharedDir dir;
  const Dataset ds = Dataset::open(write_shared_dataset(dir));
  EvalLoader ev(ds, "test", MpiRuntime::world_size(), MpiRuntime::world_rank(), 4);
  Lines mine;
  Batch b;
  while (ev.next(b)) {
    check_batch_rows(b, 1);
    mine.push_back(b.indices);
  }
  const auto all = exchange(dir, "eval", mine);
  std::vector<int> seen(kTest, 0);
  int64_t smallest = kTest, largest = 0;
  for (const Lines& rank_lines : all) {
    int64_t n = 0;
    for (const auto& l : rank_lines) {
      EXPECT_LE(static_cast<int64_t>(l.size()), 4);
      for (int64_t i : l) ++seen[static_cast<std::size_t>(i)], ++n;
    }
    smallest = std::min(smallest, n);
    largest = std::max(largest, n);
  }
  for (int64_t i = 0; i < kTest; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "sample " << i;
  EXPECT_LE(largest - smallest, 1);
}

}  // namespace
}  // namespace mirror::data
