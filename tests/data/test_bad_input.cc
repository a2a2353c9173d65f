// test_bad_input.cc — every kind of bad dataset gives a mirror::Error that names the file, the dataset
// or attribute, and what was expected. Each case breaks a good file in exactly one way.
#include <gtest/gtest.h>

#include <fstream>

#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using test::IdSpec;
using test::TempDir;

// The message of the Error that f() throws (empty when it throws none), after checking its kind.
template <typename F>
std::string error_of(F f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

void expect_has(const std::string& message, std::initializer_list<std::string> parts) {
  for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

class BadInput : public testing::Test {
 protected:
  void SetUp() override { test::write_id_dataset(path_, spec_); }
  std::string open_error(ErrorKind kind = ErrorKind::kFormat) {
    return error_of([&] { Dataset::open(path_); }, kind);
  }
  TempDir dir_;
  IdSpec spec_;
  std::string path_ = dir_.file("d.h5");
};

TEST_F(BadInput, GoodFileOpens) { EXPECT_NO_THROW(Dataset::open(path_)); }

TEST_F(BadInput, MissingFile) {
  const std::string m = error_of([&] { Dataset::open(dir_.file("nope.h5")); }, ErrorKind::kIo);
  expect_has(m, {dir_.file("nope.h5"), "does not exist"});
}

TEST_F(BadInput, NotHdf5) {
  std::ofstream(dir_.file("text.h5")) << "hello\n";
  const std::string m = error_of([&] { Dataset::open(dir_.file("text.h5")); }, ErrorKind::kFormat);
  expect_has(m, {"text.h5", "not an HDF5 file"});
}

TEST_F(BadInput, MissingSplit) {
  test::delete_link(path_, "/test");
  expect_has(open_error(), {path_, "split '/test' missing", "expected groups /train and /test"});
}

TEST_F(BadInput, MissingDataset) {
  test::delete_link(path_, "/train/y");
  expect_has(open_error(), {path_, "'/train/y' missing", "int32 labels"});
}

TEST_F(BadInput, MissingAttribute) {
  test::delete_attr(path_, "num_classes");
  expect_has(open_error(), {path_, "'num_classes' missing", "expected an integer"});
}

TEST_F(BadInput, WrongFormatVersion) {
  test::set_int_attr(path_, "format_version", {7});
  expect_has(open_error(), {path_, "format_version is 7", "expected 1"});
}

TEST_F(BadInput, WrongXDtype) {
  test::replace_dataset(path_, "/train/x", H5T_NATIVE_INT16, {spec_.train, spec_.features});
  expect_has(open_error(), {path_, "'/train/x'", "wrong dtype", "expected uint8 or float32"});
}

TEST_F(BadInput, WrongYDtype) {
  test::replace_dataset(path_, "/test/y", H5T_NATIVE_FLOAT, {spec_.test});
  expect_has(open_error(), {path_, "'/test/y'", "wrong dtype", "expected integer class ids"});
}

TEST_F(BadInput, WrongSampleShape) {
  test::replace_dataset(path_, "/train/x", H5T_NATIVE_FLOAT, {spec_.train, spec_.features + 1});
  expect_has(open_error(), {path_, "'/train/x'", "has shape 100 x 5", "expected N x 4"});
}

TEST_F(BadInput, WrongRank) {
  test::replace_dataset(path_, "/train/y", H5T_NATIVE_INT32, {spec_.train, 2});
  expect_has(open_error(), {path_, "'/train/y'", "expected a vector"});
}

TEST_F(BadInput, XYLengthMismatch) {
  test::replace_dataset(path_, "/train/y", H5T_NATIVE_INT32, {spec_.train - 3});
  expect_has(open_error(), {path_, "x/y length mismatch", "100 samples", "97", "expected equal N"});
}

TEST_F(BadInput, LabelOutOfRange) {
  test::poke_label(path_, "/test/y", 6, 99);
  expect_has(open_error(), {path_, "'/test/y'", "label 99 at index 6", "expected 0 <= label < 5"});
  test::poke_label(path_, "/test/y", 6, -1);
  expect_has(open_error(), {"label -1 at index 6"});
}

TEST_F(BadInput, EmptySplit) {
  test::replace_dataset(path_, "/test/x", H5T_NATIVE_FLOAT, {0, spec_.features});
  test::replace_dataset(path_, "/test/y", H5T_NATIVE_INT32, {0});
  expect_has(open_error(), {path_, "split '/test' is empty", "expected at least one sample"});
}

TEST_F(BadInput, FewerSamplesThanOneGlobalBatch) {
  const Dataset ds = Dataset::open(path_);  // 100 training samples
  const std::string m = error_of(
      [&] { TrainLoader loader(ds, SamplerOptions{0, 4, 1, 30, 0}, LoaderOptions{}); }, ErrorKind::kInvalidArgument);
  expect_has(m, {path_, "'/train'", "100 samples", "4 ranks x 30 = 120", "3 ranks x 30 would fit",
                 "4 ranks x batch 25"});
}

TEST_F(BadInput, DatasetSizeDisagreesWithSplit) {
  const Dataset ds = Dataset::open(path_);
  const std::string m = error_of(
      [&] { TrainLoader loader(ds, SamplerOptions{0, 1, 0, 10, 99}, LoaderOptions{}); }, ErrorKind::kInvalidArgument);
  expect_has(m, {"dataset_size 99", "100 samples"});
}

TEST(BadShards, MissingShardFile) {
  TempDir dir;
  IdSpec spec;
  spec.shards = 3;
  const auto files = test::write_id_dataset(dir.file("s.h5"), spec);
  std::remove(files[1].c_str());
  const std::string m = error_of([&] { Dataset::open(files[0]); }, ErrorKind::kIo);
  expect_has(m, {files[1], "shard 1 of 3", "does not exist"});
}

TEST(BadShards, ShardsDisagreeOnClasses) {
  TempDir dir;
  IdSpec spec;
  spec.shards = 2;
  const auto files = test::write_id_dataset(dir.file("s.h5"), spec);
  test::set_int_attr(files[1], "num_classes", {9});
  const std::string m = error_of([&] { Dataset::open(files[0]); }, ErrorKind::kFormat);
  expect_has(m, {"shard files disagree", files[0], files[1], "num_classes 5", "9"});
}

TEST(BadShards, ShardsDisagreeOnShape) {
  TempDir dir;
  IdSpec spec;
  spec.shards = 2;
  const auto files = test::write_id_dataset(dir.file("s.h5"), spec);
  test::set_int_attr(files[1], "sample_shape", {2, 2});
  const std::string m = error_of([&] { Dataset::open(files[0]); }, ErrorKind::kFormat);
  expect_has(m, {"shard files disagree", "sample_shape 4", "2 x 2"});
}

TEST(BadShards, ShardIndexDisagreesWithName) {
  TempDir dir;
  IdSpec spec;
  spec.shards = 2;
  const auto files = test::write_id_dataset(dir.file("s.h5"), spec);
  test::set_int_attr(files[1], "shard_index", {0});
  const std::string m = error_of([&] { Dataset::open(files[0]); }, ErrorKind::kFormat);
  expect_has(m, {"shard files disagree", files[1], "shard 0 of 2", "expected shard 1 of 2"});
}

TEST(BadShards, FilesShardingNeedsAShardPerRank) {
  TempDir dir;
  IdSpec spec;
  spec.shards = 2;
  test::write_id_dataset(dir.file("s.h5"), spec);
  const Dataset ds = Dataset::open(dir.file("s.h5"));
  LoaderOptions lo;
  lo.sharding = Sharding::kFiles;
  const std::string m =
      error_of([&] { TrainLoader l(ds, SamplerOptions{0, 3, 0, 2, 0}, lo); }, ErrorKind::kInvalidArgument);
  expect_has(m, {"--sharding files", "2 shard file(s) for 3 ranks", "--shards 3"});
  // Three shards of 33, 33, 34 over two ranks: rank 1 holds only 33 samples.
  spec.shards = 3;
  test::write_id_dataset(dir.file("t.h5"), spec);
  const Dataset ds3 = Dataset::open(dir.file("t.h5"));
  const std::string small =
      error_of([&] { TrainLoader l(ds3, SamplerOptions{0, 2, 0, 40, 0}, lo); }, ErrorKind::kInvalidArgument);
  expect_has(small, {"rank 1's shard files hold 33 samples", "fewer than one batch of 40",
                     "2 ranks x batch 33 would fit"});
}

TEST(BadOptions, UnknownSplitAndSharding) {
  TempDir dir;
  test::write_id_dataset(dir.file("d.h5"), IdSpec{});
  const Dataset ds = Dataset::open(dir.file("d.h5"));
  expect_has(error_of([&] { ds.split("valid"); }, ErrorKind::kInvalidArgument), {"unknown split 'valid'"});
  expect_has(error_of([&] { parse_sharding("rows"); }, ErrorKind::kInvalidArgument), {"'index' or 'files'"});
  EXPECT_EQ(parse_sharding("files"), Sharding::kFiles);
}

}  // namespace
}  // namespace mirror::data
