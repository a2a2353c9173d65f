// mirror/data/import.h — `mirror-data import`: the user's own data into Mirror's format (docs/dataset-format.md,
// "Importing your own data"), from NumPy .npy pairs, .npz archives (keys x/y, or Keras' x_train/y_train/
// x_test/y_test), any HDF5 file with datasets the user names, or an image folder (ROOT/<class>/<image>).
// Streaming: the input is read a block of rows at a time (labels twice: once to find the classes), never
// held in memory whole. Every conversion is checked and refused when it would lose information; the output
// is written under temporary names and renamed into place only when complete.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mirror/data/dataset.h"
#include "mirror/data/writer.h"

namespace mirror::data {

enum class SampleLayout { kChannelsFirst, kChannelsLast };  // --layout nchw | nhwc
SampleLayout parse_layout(const std::string& name);         // "nchw" | "nhwc"; throws kInvalidArgument

struct ImportOptions {
  // The training data: SRC (a .npz, an .h5/.hdf5 file, a folder, or the x .npy) and the names inside it:
  // .npz keys, HDF5 dataset paths, or for .npy pairs the two file names (x_name may stand in for SRC).
  std::string source, x_name, y_name;
  // The test data: another SRC of the same kind (test_x/test_y default to x_name/y_name), or names
  // test_x/test_y inside SRC itself, or a random fraction of SRC's samples (0 < fraction < 1).
  std::string test_source, test_x_name, test_y_name;
  double test_fraction = 0;
  uint64_t seed = 0;                        // of the --test-fraction draw
  SampleLayout layout = SampleLayout::kChannelsFirst;
  std::optional<DType> x_dtype;             // default: uint8 for uint8/bool input, float32 otherwise
  std::optional<double> x_scale;            // default: 1/255 for uint8 (pixels to [0, 1]), 1 for float32
  int64_t num_classes = 0;                  // 0: the number of class names, else the largest label + 1
  std::vector<std::string> class_names;     // optional; an image folder's come from its sub-folders
  WriteOptions write;
};

struct ImportSummary {
  std::string kind;                  // "npy" | "npz" | "hdf5" | "images"
  std::vector<std::string> files;    // written
  int64_t train = 0, test = 0, num_classes = 0;
  std::vector<int64_t> sample_shape;
  DType x_dtype = DType::kUInt8;
};

// Imports into `out` ("<stem>.h5"; with write.shards K the K shard files). Throws mirror::Error (kIo,
// kFormat, kInvalidArgument) naming the input, the sample and the feature at fault; nothing is left
// under the output's names then.
ImportSummary import_dataset(const std::string& out, const ImportOptions& options);

}  // namespace mirror::data
