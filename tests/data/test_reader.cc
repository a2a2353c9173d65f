// test_reader.cc — writer/reader round trip and the loaders in one process: every value read is checked
// against the id dataset's formula; ranks are built side by side to check coverage and equivalence.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using test::IdSpec;
using test::TempDir;

// Checks every row of a batch of the float id dataset (identity scaling) against its index.
void expect_rows_match(const Batch& b, int64_t features, int64_t classes, int split = 0) {
  ASSERT_EQ(static_cast<int64_t>(b.x.size()), b.size * features);
  ASSERT_EQ(static_cast<int64_t>(b.y.size()), b.size);
  ASSERT_EQ(static_cast<int64_t>(b.indices.size()), b.size);
  for (int64_t k = 0; k < b.size; ++k) {
    const int64_t i = b.indices[static_cast<std::size_t>(k)];
    EXPECT_EQ(b.y[static_cast<std::size_t>(k)], test::label_of(i, classes));
    for (int64_t f = 0; f < features; ++f) {
      ASSERT_EQ(b.x[static_cast<std::size_t>(k * features + f)], test::float_value(i, f, split)) << "row " << i;
    }
  }
}

TEST(Reader, RoundTripSingleFileAndShards) {
  for (int64_t shards : {1, 3}) {
    TempDir dir;
    IdSpec spec;
    spec.train = 101;
    spec.test = 17;
    spec.shards = shards;
    spec.chunk_samples = 8;
    const auto files = test::write_id_dataset(dir.file("ids.h5"), spec);
    ASSERT_EQ(static_cast<int64_t>(files.size()), shards);
    const Dataset ds = Dataset::open(files[0]);
    EXPECT_EQ(ds.info().train_size, 101);
    EXPECT_EQ(ds.info().test_size, 17);
    EXPECT_EQ(ds.info().num_classes, 5);
    EXPECT_EQ(ds.info().features, 4);
    EXPECT_EQ(ds.info().x_dtype, DType::kFloat32);
    EXPECT_EQ(ds.num_shards(), shards);
    EXPECT_EQ(ds.split("train").chunk_samples, 8);
    // Histogram from the label formula, independently of the reader.
    std::vector<int64_t> hist(5, 0);
    for (int64_t i = 0; i < 101; ++i) ++hist[static_cast<std::size_t>(test::label_of(i, 5))];
    EXPECT_EQ(ds.split("train").class_counts, hist);
    int64_t sum = 0;
    for (int64_t s : ds.split("train").shard_sizes) sum += s;
    EXPECT_EQ(sum, 101);
    for (const char* split : {"train", "test"}) {
      EvalLoader ev(ds, split, 1, 0, 10);
      Batch b;
      int64_t n = 0;
      while (ev.next(b)) {
        expect_rows_match(b, 4, 5, std::string(split) == "test" ? 1 : 0);
        for (int64_t k = 0; k < b.size; ++k) EXPECT_EQ(b.indices[static_cast<std::size_t>(k)], n + k);
        n += b.size;
      }
      EXPECT_EQ(n, ds.split(split).size);
    }
  }
}

TEST(Reader, OpensShardSetFromStemOrAnyShard) {
  TempDir dir;
  IdSpec spec;
  spec.shards = 4;
  const auto files = test::write_id_dataset(dir.file("s.h5"), spec);
  EXPECT_EQ(files[1], dir.file("s-00001-of-00004.h5"));
  EXPECT_EQ(Dataset::open(dir.file("s.h5")).files(), files);
  EXPECT_EQ(Dataset::open(files[2]).files(), files);
}

TEST(Reader, Uint8ScalingAndMultiDimShape) {
  TempDir dir;
  IdSpec spec;
  spec.dtype = DType::kUInt8;
  spec.shape = {3, 4};
  spec.features = 12;
  spec.scaling = Scaling{1.0 / 255.0, 0.5, 0.25};
  test::write_id_dataset(dir.file("u8.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("u8.h5"));
  EXPECT_EQ(ds.info().sample_shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ds.info().x_dtype, DType::kUInt8);
  EvalLoader ev(ds, "train", 1, 0, 64);
  Batch b;
  while (ev.next(b)) {
    for (int64_t k = 0; k < b.size; ++k) {
      for (int64_t f = 0; f < 12; ++f) {
        const double v = test::byte_value(b.indices[static_cast<std::size_t>(k)], f, 0);
        EXPECT_NEAR(b.x[static_cast<std::size_t>(k * 12 + f)], (v / 255.0 - 0.5) / 0.25, 1e-5);
      }
    }
  }
}

TEST(TrainLoader, SideBySideRanksFollowSamplerInEveryMode) {
  TempDir dir;
  IdSpec spec;
  spec.train = 203;
  spec.shards = 3;
  spec.chunk_samples = 16;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  for (int world : {1, 3}) {
    for (bool in_memory : {true, false}) {
      for (int prefetch : {0, 2}) {
        SCOPED_TRACE("world " + std::to_string(world) + " in_memory " + std::to_string(in_memory) + " prefetch " +
                     std::to_string(prefetch));
        const int64_t batch = 7;
        const Sampler one(SamplerOptions{5, 1, 0, batch * world, 203});
        std::vector<std::unique_ptr<TrainLoader>> ranks;
        LoaderOptions lo;
        lo.in_memory = in_memory;
        lo.prefetch_depth = prefetch;
        for (int r = 0; r < world; ++r)
          ranks.push_back(std::make_unique<TrainLoader>(ds, SamplerOptions{5, world, r, batch, 0}, lo));
        const int64_t steps = 203 / (batch * world);
        for (int64_t epoch : {0, 1}) {
          std::vector<std::vector<int64_t>> step_concat(static_cast<std::size_t>(steps));
          for (auto& loader : ranks) {
            ASSERT_EQ(loader->steps_per_epoch(), steps);
            loader->start_epoch(epoch);
            Batch b;
            int64_t t = 0;
            while (loader->next(b)) {
              ASSERT_LT(t, steps);
              EXPECT_EQ(b.epoch, epoch);
              EXPECT_EQ(b.step, t);
              EXPECT_EQ(b.size, batch);
              expect_rows_match(b, 4, 5);
              auto& c = step_concat[static_cast<std::size_t>(t)];
              c.insert(c.end(), b.indices.begin(), b.indices.end());
              ++t;
            }
            EXPECT_EQ(t, steps);
            EXPECT_FALSE(loader->next(b));
          }
          std::set<int64_t> all;
          for (int64_t t = 0; t < steps; ++t) {
            EXPECT_EQ(step_concat[static_cast<std::size_t>(t)], one.indices(epoch, t));
            all.insert(step_concat[static_cast<std::size_t>(t)].begin(), step_concat[static_cast<std::size_t>(t)].end());
          }
          EXPECT_EQ(static_cast<int64_t>(all.size()), steps * batch * world);
        }
      }
    }
  }
}

TEST(TrainLoader, ResumeMidEpochMatchesTheTailOfAFullEpoch) {
  TempDir dir;
  IdSpec spec;
  spec.train = 90;
  spec.shards = 2;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  for (Sharding sharding : {Sharding::kIndex, Sharding::kFiles}) {
    LoaderOptions lo;
    lo.sharding = sharding;
    lo.shuffle_buffer = 16;
    TrainLoader full(ds, SamplerOptions{11, 2, 1, 4, 0}, lo);
    TrainLoader resumed(ds, SamplerOptions{11, 2, 1, 4, 0}, lo);
    full.start_epoch(3);
    resumed.start_epoch(3, 5);
    std::vector<std::vector<int64_t>> a, b;
    Batch batch;
    while (full.next(batch)) a.push_back(batch.indices);
    while (resumed.next(batch)) b.push_back(batch.indices);
    ASSERT_EQ(a.size(), static_cast<std::size_t>(full.steps_per_epoch()));
    ASSERT_EQ(b.size(), a.size() - 5);
    EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin() + 5)) << to_string(sharding);
    // Restarting an epoch while batches are in flight is allowed and starts over.
    full.start_epoch(3);
    ASSERT_TRUE(full.next(batch));
    EXPECT_EQ(batch.indices, a[0]);
  }
}

TEST(TrainLoader, FilesShardingReadsOnlyOwnShardsDisjointly) {
  TempDir dir;
  IdSpec spec;
  spec.train = 230;
  spec.shards = 5;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  const auto& sizes = ds.split("train").shard_sizes;
  std::vector<int64_t> offset{0};
  for (int64_t s : sizes) offset.push_back(offset.back() + s);
  for (int world : {1, 2, 3}) {
    const int64_t batch = 6;
    int64_t fewest = -1;
    for (int q = 0; q < world; ++q) {
      int64_t n = 0;
      for (std::size_t s = static_cast<std::size_t>(q); s < sizes.size(); s += static_cast<std::size_t>(world)) n += sizes[s];
      fewest = fewest < 0 ? n : std::min(fewest, n);
    }
    LoaderOptions lo;
    lo.sharding = Sharding::kFiles;
    lo.shuffle_buffer = 20;
    for (int64_t epoch : {0, 1}) {
      std::set<int64_t> seen;
      int64_t total = 0;
      std::vector<int64_t> rank0_order;
      for (int r = 0; r < world; ++r) {
        TrainLoader loader(ds, SamplerOptions{3, world, r, batch, 0}, lo);
        EXPECT_EQ(loader.steps_per_epoch(), fewest / batch);
        EXPECT_EQ(loader.sampler(), nullptr);
        loader.start_epoch(epoch);
        Batch b;
        while (loader.next(b)) {
          expect_rows_match(b, 4, 5);
          for (int64_t i : b.indices) {
            const auto s = static_cast<std::size_t>(std::upper_bound(offset.begin(), offset.end(), i) - offset.begin() - 1);
            EXPECT_EQ(static_cast<int>(s % static_cast<std::size_t>(world)), r) << "sample " << i << " of shard " << s;
            EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " twice";
            if (r == 0) rank0_order.push_back(i);
          }
          total += b.size;
        }
      }
      EXPECT_EQ(total, fewest / batch * batch * world);
      // The shuffle buffer reorders: rank 0's stream is not its shards' rows in file order.
      EXPECT_FALSE(std::is_sorted(rank0_order.begin(), rank0_order.end()));
    }
  }
}

TEST(TrainLoader, FilesShardingDeterministicPerSeedAndEpoch) {
  TempDir dir;
  IdSpec spec;
  spec.train = 120;
  spec.shards = 4;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  LoaderOptions lo;
  lo.sharding = Sharding::kFiles;
  lo.shuffle_buffer = 10;
  auto epoch_of = [&](uint64_t seed, int64_t epoch) {
    TrainLoader loader(ds, SamplerOptions{seed, 2, 0, 5, 0}, lo);
    loader.start_epoch(epoch);
    std::vector<int64_t> out;
    Batch b;
    while (loader.next(b)) out.insert(out.end(), b.indices.begin(), b.indices.end());
    return out;
  };
  EXPECT_EQ(epoch_of(1, 0), epoch_of(1, 0));
  EXPECT_NE(epoch_of(1, 0), epoch_of(1, 1));
  EXPECT_NE(epoch_of(1, 0), epoch_of(2, 0));
}

TEST(EvalLoader, RanksSideBySideCoverEverySampleOnce) {
  TempDir dir;
  IdSpec spec;
  spec.test = 23;
  spec.shards = 2;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  for (int world : {1, 2, 3, 4, 30}) {
    std::vector<int> seen(23, 0);
    int64_t smallest = 1 << 30, largest = 0;
    for (int r = 0; r < world; ++r) {
      EvalLoader ev(ds, "test", world, r, 4);
      smallest = std::min(smallest, ev.count());
      largest = std::max(largest, ev.count());
      EXPECT_EQ(ev.num_batches(), (ev.count() + 3) / 4);
      Batch b;
      int64_t expect_next = ev.first_index();
      int64_t batches = 0;
      while (ev.next(b)) {
        EXPECT_LE(b.size, 4);
        expect_rows_match(b, 4, 5, 1);
        for (int64_t i : b.indices) {
          EXPECT_EQ(i, expect_next++);  // contiguous
          ++seen[static_cast<std::size_t>(i)];
        }
        ++batches;
      }
      EXPECT_EQ(batches, ev.num_batches());
      ev.reset();
      EXPECT_EQ(ev.next(b), ev.count() > 0);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; })) << "world " << world;
    EXPECT_LE(largest - smallest, 1);
  }
}

TEST(TrainLoader, ReportsWaitTime) {
  TempDir dir;
  IdSpec spec;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  TrainLoader loader(ds, SamplerOptions{1, 1, 0, 10, 0}, LoaderOptions{});
  EXPECT_THROW({ Batch b; loader.next(b); }, Error);  // before start_epoch
  loader.start_epoch(0);
  Batch b;
  while (loader.next(b)) EXPECT_GE(b.wait_seconds, 0.0);
}

TEST(TrainLoader, ReadErrorInPrefetchThreadReachesTheCaller) {
  TempDir dir;
  IdSpec spec;
  spec.train = 2000;
  spec.features = 64;
  test::write_id_dataset(dir.file("ids.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("ids.h5"));
  LoaderOptions lo;
  lo.in_memory = false;
  lo.prefetch_depth = 2;
  lo.chunk_cache_bytes = 0;  // nothing cached: every batch reads the file
  TrainLoader loader(ds, SamplerOptions{1, 1, 0, 50, 0}, lo);
  // The file loses its data after the loader opened it: reads fail in the prefetch thread.
  std::filesystem::resize_file(dir.file("ids.h5"), 4096);
  loader.start_epoch(0);
  Batch b;
  try {
    while (loader.next(b)) {
    }
    ADD_FAILURE() << "no error from a truncated file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kHdf5) << e.what();
    EXPECT_NE(e.message().find("ids.h5"), std::string::npos) << e.message();
  }
  // The loader stays usable (restarting an epoch does not hang); the destructor joins cleanly.
  loader.start_epoch(1);
  EXPECT_THROW(loader.next(b), Error);
}

}  // namespace
}  // namespace mirror::data
