// mirror/data/convert.h — producers of datasets in Mirror's format: the real Fashion-MNIST (from the
// Debian package dataset-fashion-mnist) and a synthetic, learnable classification set of any size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mirror/data/writer.h"

namespace mirror::data {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Converts the four IDX files in `src_dir` (train-images-idx3-ubyte.gz, ...) to `out`: uint8 28x28
// samples, 10 classes, scaling 1/255 (pixels to [0, 1]). When src_dir is missing, the error says
// "apt-get install dataset-fashion-mnist". Returns the files written.
std::vector<std::string> convert_fashion_mnist(const std::string& src_dir, const std::string& out,
                                               const WriteOptions& options = {});

struct SynthOptions {
  int64_t train = 10000, test = 2000;
  int64_t features = 32;
  // Image-shaped samples ([H, W] or [C, H, W]) instead of flat ones: when set, the dataset's sample_shape
  // is this and `features` must be 0 or its product.
  std::vector<int64_t> shape;
  int64_t classes = 10;
  uint64_t seed = 0;
  double spread = 1.0;  // noise standard deviation per feature (centres are standard normal per feature)
};

// Gaussian clusters: class c has a random centre; samples are centre + noise, float32, labels uniform.
// With `shape` set, the centre is an image pattern: each element of class c is a standard-normal value
// (the class's random pixel pattern, in C, H, W order) plus noise, so a CNN can learn it too.
// Deterministic for a given seed. Returns the files written.
std::vector<std::string> write_synthetic(const std::string& out, const SynthOptions& synth,
                                         const WriteOptions& options = {});

// A human-readable report of a dataset (splits, shapes, dtypes, class histograms, chunking, size on disk).
std::string inspect_report(const std::string& path);

}  // namespace mirror::data
