// mirror/data/writer.h — DatasetWriter: writes a dataset in the format of docs/dataset-format.md, as one
// file or as K shard files ("<stem>-IIIII-of-KKKKK.h5"), from samples appended in order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mirror/data/dataset.h"

namespace mirror::data {

// What every file of the dataset says about itself.
struct DatasetHeader {
  int64_t num_classes = 0;
  std::vector<int64_t> sample_shape;
  DType x_dtype = DType::kUInt8;
  Scaling scaling;
  std::vector<std::string> class_names;  // optional: empty, or one name per class
};

struct WriteOptions {
  int64_t shards = 1;         // K >= 1; shard k holds samples [k*N/K, (k+1)*N/K) of each split
  int64_t chunk_samples = 0;  // rows per HDF5 chunk of x; 0 picks about 256 KiB per chunk
  int gzip_level = 0;         // 0 = no compression (fastest random reads), 1..9 = deflate
};

class DatasetWriter {
 public:
  // Creates the file(s) for a dataset of `train_size` + `test_size` samples. `path` is "<stem>.h5"; with
  // shards > 1 the files are shard_path(path, k, K). Throws kInvalidArgument for a bad header or sizes.
  DatasetWriter(const std::string& path, const DatasetHeader& header, int64_t train_size, int64_t test_size,
                const WriteOptions& options = {});
  ~DatasetWriter();  // closes the files; never throws (call close() to learn about errors)
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // Appends `count` samples to `split` ("train" | "test"): x holds count x features values of the header's
  // dtype (uint8_t or float), y holds count labels in [0, num_classes).
  void append(const std::string& split, const void* x, const int32_t* y, int64_t count);
  // Checks that every split received exactly its size, flushes and closes. Throws when it did not.
  void close();
  const std::vector<std::string>& files() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mirror::data
