// test_util.h — helpers shared by the data tests: a temporary directory, an "id" dataset whose every
// value is a known function of (sample, feature) so a read can be checked against the formula, and
// HDF5 edits that break a good file in one precise way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <hdf5.h>

#include "mirror/data/writer.h"

namespace mirror::data::test {

// A fresh directory under $TMPDIR (or /tmp), removed with its content on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The id dataset: sample i of split s (0 train, 1 test) has label label_of(i, classes) and, for float32,
// value(i, f) = i * 1000 + f + s * 0.5 (exact in float for the sizes used); for uint8, (i * 7 + f + s) % 256.
inline int32_t label_of(int64_t i, int64_t classes) { return static_cast<int32_t>((i * 7 + 3) % classes); }
inline float float_value(int64_t i, int64_t f, int split) { return static_cast<float>(i * 1000 + f) + 0.5f * split; }
inline uint8_t byte_value(int64_t i, int64_t f, int split) { return static_cast<uint8_t>((i * 7 + f + split) % 256); }

struct IdSpec {
  int64_t train = 100, test = 20, features = 4, classes = 5, shards = 1;
  DType dtype = DType::kFloat32;
  Scaling scaling;           // identity by default
  int64_t chunk_samples = 0;
  std::vector<int64_t> shape;  // default {features}
};

// Writes the id dataset; returns the files written.
std::vector<std::string> write_id_dataset(const std::string& path, const IdSpec& spec);

// Sample index encoded in a float32 row of the id dataset with identity scaling (row[0] / 1000).
inline int64_t id_of_row(const float* row) { return static_cast<int64_t>(row[0]) / 1000; }

// In-place edits of an existing HDF5 file.
void delete_link(const std::string& file, const std::string& path);
// Replaces dataset `path` with one of native type `type` and dims `dims`, filled with zeros.
void replace_dataset(const std::string& file, const std::string& path, hid_t type, const std::vector<int64_t>& dims);
void set_int_attr(const std::string& file, const std::string& name, const std::vector<int64_t>& values);
void delete_attr(const std::string& file, const std::string& name);
// Writes label `value` at index `i` of `path` (an int32 dataset).
void poke_label(const std::string& file, const std::string& path, int64_t i, int32_t value);
// Writes float `value` at [row, feature] of `path` (a 2-d float dataset).
void poke_value(const std::string& file, const std::string& path, int64_t row, int64_t feature, float value);

}  // namespace mirror::data::test
