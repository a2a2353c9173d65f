// test_non_finite.cc — NaN/Inf in a float dataset is refused where the data is read anyway, naming the split,
// the global sample and the feature: on the in-memory load (when the loader is built), per batch without
// in_memory and with files sharding (rethrown by next() from the prefetch thread), and per evaluation
// batch. Also: labels stored as int64 (h5py's default) are read like int32 ones.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using test::IdSpec;
using test::TempDir;

class NonFinite : public testing::Test {
 protected:
  void SetUp() override {
    spec_.train = 100;
    spec_.test = 30;
    spec_.features = 5;
    spec_.shards = 2;  // shard 1 holds train samples 50..99 and test samples 15..29
    test::write_id_dataset(dir_.file("d.h5"), spec_);
    shard1_ = shard_path(dir_.file("d.h5"), 1, 2);
  }
  Dataset open() { return Dataset::open(dir_.file("d.h5")); }
  SamplerOptions sampler() {
    SamplerOptions s;
    s.batch_per_rank = 10;  // 100 / 10: every sample is in some batch of the epoch, none dropped
    return s;
  }
  // Runs one epoch; returns the error's message (empty when none) and checks its kind.
  std::string epoch_error(const LoaderOptions& options) {
    try {
      TrainLoader loader(open(), sampler(), options);
      loader.start_epoch(0);
      Batch b;
      while (loader.next(b)) {
      }
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kFormat) << e.what();
      return e.message();
    }
    return "";
  }
  void expect_names(const std::string& m, const std::string& split, int64_t sample, int64_t feature, const char* what) {
    for (const std::string& part : {"split '/" + split + "'", "sample " + std::to_string(sample),
                                    "feature " + std::to_string(feature), std::string("is ") + what, shard1_}) {
      EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' not in: " << m;
    }
  }
  TempDir dir_;
  IdSpec spec_;
  std::string shard1_;
};

TEST_F(NonFinite, CleanDataReadsEverywhere) {
  LoaderOptions o;
  EXPECT_EQ(epoch_error(o), "");
  o.in_memory = false;
  EXPECT_EQ(epoch_error(o), "");
  o.sharding = Sharding::kFiles;
  EXPECT_EQ(epoch_error(o), "");
}

TEST_F(NonFinite, InMemoryLoadRefusesNaNWhenBuilt) {
  test::poke_value(shard1_, "/train/x", 12, 3, NAN);  // global sample 62
  LoaderOptions o;
  o.prefetch_depth = 0;
  try {
    TrainLoader loader(open(), sampler(), o);
    FAIL() << "the in-memory load accepted a NaN";
  } catch (const Error& e) {
    expect_names(e.message(), "train", 62, 3, "NaN");
  }
}

TEST_F(NonFinite, BatchReadRefusesInfWithPrefetch) {
  test::poke_value(shard1_, "/train/x", 40, 0, -INFINITY);  // global sample 90
  LoaderOptions o;
  o.in_memory = false;
  o.prefetch_depth = 2;
  expect_names(epoch_error(o), "train", 90, 0, "-Inf");
  o.prefetch_depth = 0;
  expect_names(epoch_error(o), "train", 90, 0, "-Inf");
}

TEST_F(NonFinite, FilesShardingRefusesNaN) {
  test::poke_value(shard1_, "/train/x", 0, 4, NAN);  // global sample 50
  LoaderOptions o;
  o.sharding = Sharding::kFiles;
  o.shuffle_buffer = 16;
  expect_names(epoch_error(o), "train", 50, 4, "NaN");
}

TEST_F(NonFinite, EvaluationRefusesInf) {
  test::poke_value(shard1_, "/test/x", 3, 1, INFINITY);  // global test sample 18
  EvalLoader loader(open(), "test", 1, 0, 8);
  Batch b;
  try {
    while (loader.next(b)) {
    }
    FAIL() << "evaluation accepted an Inf";
  } catch (const Error& e) {
    expect_names(e.message(), "test", 18, 1, "+Inf");
  }
}

TEST(Int64Labels, ReadLikeInt32) {
  TempDir dir;
  IdSpec spec;
  const std::string path = dir.file("d.h5");
  test::write_id_dataset(path, spec);
  // The id dataset's labels are (i * 7 + 3) % classes; store them as int64 instead of int32.
  test::replace_dataset(path, "/train/y", H5T_STD_I64LE, {spec.train});
  for (int64_t i = 0; i < spec.train; ++i) test::poke_label(path, "/train/y", i, test::label_of(i, spec.classes));
  const Dataset ds = Dataset::open(path);
  EvalLoader loader(ds, "train", 1, 0, spec.train);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  for (int64_t i = 0; i < spec.train; ++i) EXPECT_EQ(b.y[static_cast<std::size_t>(i)], test::label_of(i, spec.classes));
}

}  // namespace
}  // namespace mirror::data
