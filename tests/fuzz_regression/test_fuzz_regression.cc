// test_fuzz_regression.cc — the fuzzers' past findings as regression cases: each file in inputs/ (named
// "<parser>-<what was wrong>.<ext>") goes through the parser named by its prefix, and must be rejected
// with a mirror::Error of kind kFormat/kHdf5 — never a crash, another exception type, or acceptance.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <hdf5.h>

#include "exercise.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_with_prefix(const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(MIRROR_FUZZ_INPUTS)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `parse` on `file` and checks it throws a mirror::Error saying the file is malformed.
template <typename Parse>
void expect_rejected(const fs::path& file, Parse parse) {
  SCOPED_TRACE(file.string());
  try {
    parse();
    ADD_FAILURE() << "accepted a malformed file";
  } catch (const mirror::Error& e) {
    EXPECT_TRUE(e.kind() == mirror::ErrorKind::kFormat || e.kind() == mirror::ErrorKind::kHdf5) << e.what();
    EXPECT_NE(e.message().find(file.filename().string()), std::string::npos)
        << "the message should name the file: " << e.what();
  }
}

TEST(FuzzRegression, EveryKeptInputIsNamedAfterItsParser) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(MIRROR_FUZZ_INPUTS)) {
    const std::string name = e.path().filename().string();
    ++n;
    EXPECT_TRUE(name.rfind("dataset-", 0) == 0 || name.rfind("checkpoint-", 0) == 0 || name.rfind("idx-", 0) == 0)
        << name;
  }
  EXPECT_GT(n, 0u);
}

TEST(FuzzRegression, DatasetInputsAreRejectedCleanly) {
  const auto files = inputs_with_prefix("dataset-");
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) expect_rejected(f, [&] { mirror::fuzz::exercise_dataset(f.string()); });
}

TEST(FuzzRegression, CheckpointInputsAreRejectedCleanly) {
  const auto files = inputs_with_prefix("checkpoint-");
  for (const fs::path& f : files) expect_rejected(f, [&] { mirror::fuzz::exercise_checkpoint(f.string()); });
}

TEST(FuzzRegression, IdxInputsAreRejectedCleanly) {
  for (const fs::path& f : inputs_with_prefix("idx-")) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    expect_rejected(f, [&] { mirror::fuzz::exercise_idx(f.string(), raw); });
  }
}

// A valid checkpoint whose scalar attribute `name` is replaced by one of `count` elements of `type`. The
// reader used to H5Aread every element into a one-element buffer (a stack overflow under ASan).
fs::path checkpoint_with_array_attr(const fs::path& dir, const char* name, hid_t type, std::size_t count) {
  mirror::train::CheckpointState s;
  s.step = 3;
  s.model_spec = "mlp:2";
  s.sample_shape = {4};
  s.input_features = 4;
  s.optimizer_kind = "sgd";
  s.params.push_back({"w", {2, 2}, {1, 2, 3, 4}});
  fs::create_directories(dir);
  const fs::path path = mirror::train::write_checkpoint(dir.string(), s);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  EXPECT_GE(H5Adelete(f, name), 0);
  const hsize_t n = count;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t attr = H5Acreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<char> zeros(count * H5Tget_size(type), 'm');
  EXPECT_GE(H5Awrite(attr, type, zeros.data()), 0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Fclose(f);
  return path;
}

TEST(FuzzRegression, CheckpointScalarAttributeWithSeveralElementsIsRejected) {
  const fs::path dir = fs::temp_directory_path() / ("mirror-fuzz-regression-" + std::to_string(::getpid()));
  const fs::path a = checkpoint_with_array_attr(dir / "a", "step", H5T_STD_I64LE, 64);
  expect_rejected(a, [&] { mirror::fuzz::exercise_checkpoint(a.string()); });
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 16);
  const fs::path b = checkpoint_with_array_attr(dir / "b", "model_spec", str, 64);
  H5Tclose(str);
  expect_rejected(b, [&] { mirror::fuzz::exercise_checkpoint(b.string()); });
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
