// test_checkpoint.cc — checkpoint files: exact round trip, atomic naming, corruption and truncation detected,
// newest-valid fallback, pruning.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "mirror/error.h"
#include "mirror/train/checkpoint.h"

namespace fs = std::filesystem;
using namespace mirror::train;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("mirror_test_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

NamedTensor random_tensor(const std::string& name, std::vector<std::int64_t> shape, unsigned seed) {
  NamedTensor t{name, shape, {}};
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  for (std::size_t i = 0; i < n; ++i) t.values.push_back(dist(rng));
  return t;
}

CheckpointState sample_state(std::int64_t step) {
  CheckpointState s;
  s.step = step;
  s.epoch = 3;
  s.epoch_micro_step = 17;
  s.world_size = 4;
  s.seed = 0xfeedface12345ull;
  s.model_spec = "mlp:32,16";
  s.model_description = "mlp:32,16 (description)";
  s.sample_shape = {1, 4, 5};
  s.input_features = 20;
  s.num_classes = 5;
  s.config_json = R"({"lr":0.05,"model":"mlp:32,16"})";
  s.metrics_jsonl = "{\"epoch\":1}\n{\"epoch\":2}\n";
  s.epoch_loss_sum = 12.375;
  s.epoch_correct = 99;
  s.epoch_samples = 128;
  s.params = {random_tensor("fc1.weight", {32, 20}, 1), random_tensor("fc1.bias", {32}, 2),
              random_tensor("fc2.weight", {5, 32}, 3)};
  s.buffers = {random_tensor("bn1.running_mean", {32}, 5), random_tensor("bn1.running_var", {32}, 6)};
  s.optimizer_kind = "sgd";
  s.optimizer_step = step;
  s.optimizer_state = {random_tensor("momentum", {32 * 20 + 32 + 5 * 32}, 4)};
  return s;
}

void flip_byte(const fs::path& file, std::uintmax_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

}  // namespace

TEST(Checkpoint, RoundTripIsExact) {
  fs::path dir = fresh_dir("roundtrip");
  CheckpointState s = sample_state(1200);
  const std::string path = write_checkpoint(dir.string(), s);
  EXPECT_EQ(fs::path(path).filename(), "ckpt-00001200.h5");
  CheckpointState r = read_checkpoint(path);
  EXPECT_EQ(r.step, s.step);
  EXPECT_EQ(r.epoch, s.epoch);
  EXPECT_EQ(r.epoch_micro_step, s.epoch_micro_step);
  EXPECT_EQ(r.world_size, s.world_size);
  EXPECT_EQ(r.seed, s.seed);
  EXPECT_EQ(r.format_version, kCheckpointFormatVersion);
  EXPECT_EQ(r.model_spec, s.model_spec);
  EXPECT_EQ(r.model_description, s.model_description);
  EXPECT_EQ(r.sample_shape, s.sample_shape);
  EXPECT_EQ(r.input_features, s.input_features);
  EXPECT_EQ(r.num_classes, s.num_classes);
  EXPECT_EQ(r.config_json, s.config_json);
  EXPECT_EQ(r.metrics_jsonl, s.metrics_jsonl);
  EXPECT_EQ(r.epoch_loss_sum, s.epoch_loss_sum);
  EXPECT_EQ(r.epoch_correct, s.epoch_correct);
  EXPECT_EQ(r.epoch_samples, s.epoch_samples);
  EXPECT_EQ(r.optimizer_kind, s.optimizer_kind);
  ASSERT_EQ(r.params.size(), s.params.size());
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    EXPECT_EQ(r.params[i].name, s.params[i].name);
    EXPECT_EQ(r.params[i].shape, s.params[i].shape);
    EXPECT_EQ(r.params[i].values, s.params[i].values);  // bit-exact
  }
  ASSERT_EQ(r.buffers.size(), s.buffers.size());
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    EXPECT_EQ(r.buffers[i].name, s.buffers[i].name);
    EXPECT_EQ(r.buffers[i].values, s.buffers[i].values);  // bit-exact
  }
  ASSERT_EQ(r.optimizer_state.size(), 1u);
  EXPECT_EQ(r.optimizer_state[0].values, s.optimizer_state[0].values);
  // Nothing but the final file is left behind.
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

TEST(Checkpoint, EveryFlippedTensorByteIsDetected) {
  fs::path dir = fresh_dir("flip");
  CheckpointState s = sample_state(5);
  const std::string path = write_checkpoint(dir.string(), s);
  const auto size = fs::file_size(path);
  // Flip bytes spread over the whole file: each corrupted copy must either fail to read or read back exactly
  // the original values (a flip in unused space). Silent wrong values are the failure this test catches.
  int detected = 0, harmless = 0;
  for (std::uintmax_t off = 0; off < size; off += 97) {
    fs::path copy = dir / "copy.h5";
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    flip_byte(copy, off);
    try {
      CheckpointState r = read_checkpoint(copy.string());
      for (std::size_t i = 0; i < s.params.size(); ++i) ASSERT_EQ(r.params[i].values, s.params[i].values) << off;
      for (std::size_t i = 0; i < s.buffers.size(); ++i) ASSERT_EQ(r.buffers[i].values, s.buffers[i].values) << off;
      ASSERT_EQ(r.sample_shape, s.sample_shape) << off;
      ASSERT_EQ(r.model_description, s.model_description) << off;
      ASSERT_EQ(r.optimizer_state[0].values, s.optimizer_state[0].values) << off;
      ASSERT_EQ(r.step, s.step) << off;
      ASSERT_EQ(r.config_json, s.config_json) << off;
      ++harmless;
    } catch (const mirror::Error& e) {
      ++detected;
    }
  }
  EXPECT_GT(detected, 0);
  fs::remove_all(dir);
}

TEST(Checkpoint, FlipInsideTensorDataIsReportedAsChecksumMismatch) {
  fs::path dir = fresh_dir("flipdata");
  CheckpointState s = sample_state(5);
  const std::string path = write_checkpoint(dir.string(), s);
  // Find fc1.weight's first bytes in the file and damage them.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string needle(reinterpret_cast<const char*>(s.params[0].values.data()), 64);
  const auto pos = bytes.find(needle);
  ASSERT_NE(pos, std::string::npos);
  flip_byte(path, pos + 10);
  try {
    read_checkpoint(path);
    FAIL() << "corruption not detected";
  } catch (const mirror::Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fc1.weight"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Checkpoint, TruncatedAndForeignFilesAreClearErrors) {
  fs::path dir = fresh_dir("trunc");
  const std::string path = write_checkpoint(dir.string(), sample_state(7));
  const auto size = fs::file_size(path);
  for (std::uintmax_t keep : {std::uintmax_t{0}, std::uintmax_t{100}, size / 2, size - 1}) {
    fs::path copy = dir / "trunc.h5";
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    fs::resize_file(copy, keep);
    EXPECT_THROW(read_checkpoint(copy.string()), mirror::Error) << "kept " << keep << " of " << size;
  }
  fs::path text = dir / "notes.h5";
  std::ofstream(text) << "not a checkpoint\n";
  try {
    read_checkpoint(text.string());
    FAIL();
  } catch (const mirror::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_checkpoint((dir / "missing.h5").string()), mirror::Error);
  fs::remove_all(dir);
}

TEST(Checkpoint, LatestValidSkipsCorruptNewerOnesAndPruneKeepsNewest) {
  fs::path dir = fresh_dir("latest");
  for (std::int64_t step : {100, 200, 300}) write_checkpoint(dir.string(), sample_state(step));
  // A leftover temporary (as a kill -9 mid-write leaves) is never taken for a checkpoint.
  std::ofstream(dir / ".ckpt-00000400.h5.tmp.123") << "partial";
  std::vector<std::string> skipped;
  auto latest = latest_valid_checkpoint(dir.string(), &skipped);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(fs::path(*latest).filename(), "ckpt-00000300.h5");
  EXPECT_TRUE(skipped.empty());

  fs::resize_file(dir / "ckpt-00000300.h5", 200);
  latest = latest_valid_checkpoint(dir.string(), &skipped);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(fs::path(*latest).filename(), "ckpt-00000200.h5");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("ckpt-00000300.h5"), std::string::npos);

  auto listed = list_checkpoints(dir.string(), true);
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_TRUE(listed[0].valid);
  EXPECT_TRUE(listed[1].valid);
  EXPECT_FALSE(listed[2].valid);
  EXPECT_EQ(listed[1].last_metrics, "{\"epoch\":2}");

  EXPECT_EQ(remove_stale_temporaries(dir.string()), 1);
  EXPECT_FALSE(fs::exists(dir / ".ckpt-00000400.h5.tmp.123"));
  EXPECT_TRUE(fs::exists(dir / "ckpt-00000300.h5"));  // real checkpoints, even corrupt ones, are not touched
  prune_checkpoints(dir.string(), 2);
  listed = list_checkpoints(dir.string(), false);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].step, 200);
  EXPECT_EQ(listed[1].step, 300);
  fs::remove_all(dir);
}

TEST(Checkpoint, LongConfigurationAndMetricsRoundTrip) {
  // HDF5 attributes are limited to 64 KiB; a long run's metrics are far larger.
  fs::path dir = fresh_dir("long");
  CheckpointState s = sample_state(9);
  s.metrics_jsonl.clear();
  for (int e = 1; e <= 3000; ++e) s.metrics_jsonl += "{\"epoch\":" + std::to_string(e) + ",\"train_loss\":0.25}\n";
  ASSERT_GT(s.metrics_jsonl.size(), 64u * 1024);
  s.config_json = std::string(70 * 1024, 'c');
  CheckpointState r = read_checkpoint(write_checkpoint(dir.string(), s));
  EXPECT_EQ(r.metrics_jsonl, s.metrics_jsonl);
  EXPECT_EQ(r.config_json, s.config_json);
  fs::remove_all(dir);
}
