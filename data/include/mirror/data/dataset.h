// mirror/data/dataset.h — the HDF5 dataset format (docs/dataset-format.md) and Dataset, which opens one
// file or a set of shard files, checks everything the format promises, and describes what it found.
// Two kinds of dataset share it: samples with class labels (images, feature vectors: no `kind`
// attribute) and token datasets for language models (`kind` = "tokens": one file, /train/tokens and
// /test/tokens, see "Token datasets" in the doc); DatasetInfo::text tells them apart.
// Dataset holds metadata only (no open file handles): it is cheap to copy, and every reader opens the
// files itself, in the process (and thread) that reads them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mirror::data {

inline constexpr int64_t kFormatVersion = 1;

// Element type of x as stored on disk (y is always int32).
enum class DType { kUInt8, kFloat32 };
const char* to_string(DType type);
std::size_t dtype_size(DType type);

// What the reader applies to every stored x value v:  (v * scale - mean) / std.
struct Scaling {
  double scale = 1.0;
  double mean = 0.0;
  double std = 1.0;
};

// One split ("train" or "test") over all shard files.
struct SplitInfo {
  std::string name;                   // "train" | "test"
  int64_t size = 0;                   // samples over all shards (token datasets: tokens)
  std::vector<int64_t> shard_sizes;   // samples in each shard file, in shard order
  std::vector<int64_t> class_counts;  // histogram of y (num_classes entries), computed on open
  int64_t chunk_samples = 0;          // rows per HDF5 chunk of x in the first shard (0: contiguous); tokens per chunk
  int64_t token_bytes = 0;            // token datasets: 2 (tokens stored as uint16) or 4 (uint32); else 0
  // Token datasets: the bytes of text the split's tokens stand for (attribute train_bytes/test_bytes; for the
  // "bytes" tokenizer the token count when absent); 0 when unknown (then no bits per byte).
  int64_t text_bytes = 0;
};

struct DatasetInfo {
  int64_t format_version = kFormatVersion;
  int64_t num_classes = 0;
  std::vector<int64_t> sample_shape;  // shape of one sample, e.g. {28, 28}
  int64_t features = 0;               // product of sample_shape
  DType x_dtype = DType::kUInt8;
  Scaling scaling;
  std::vector<std::string> class_names;  // the optional attribute class_names: empty, or num_classes names
  int64_t train_size = 0;
  int64_t test_size = 0;
  std::vector<std::string> files;  // the shard files in shard order (one entry for a single file)
  // Token datasets (kind "tokens"): text is true, num_classes == vocab_size, train_size/test_size are token
  // counts; sample_shape is empty, features 0, class_names empty, x_dtype and scaling unused.
  bool text = false;
  std::string tokenizer;           // e.g. "bytes"
  int64_t vocab_size = 0;          // every token is in [0, vocab_size)
};

class Dataset {
 public:
  // Opens `path`: a single dataset file; or any shard "<stem>-IIIII-of-KKKKK.h5" (all K shards are opened);
  // or "<stem>.h5" when it does not exist but "<stem>-00000-of-KKKKK.h5" does. Checks names, ranks, dtypes,
  // equal N for x and y, labels in range, non-empty splits, and that shard files agree; any violation
  // throws mirror::Error (kIo for a missing file, kFormat otherwise) naming the file, the dataset and the
  // expectation.
  // A file whose `kind` attribute is "tokens" is a token dataset: it must be a single file, and every token
  // of both splits is checked to be < vocab_size (one chunked pass; the first bad one is named with its split
  // and position).
  static Dataset open(const std::string& path_or_first_shard);

  const DatasetInfo& info() const { return info_; }
  // "train" or "test" (a leading '/' is accepted); throws kInvalidArgument for any other name.
  const SplitInfo& split(const std::string& name) const;
  const std::vector<std::string>& files() const { return info_.files; }
  int64_t num_shards() const { return static_cast<int64_t>(info_.files.size()); }
  // For messages: "'f.h5'" or "'f-00000-of-00004.h5' (+3 more shards)".
  std::string describe() const;

 private:
  static Dataset open_tokens(const std::vector<std::string>& files);  // token_dataset.cc
  DatasetInfo info_;
  SplitInfo train_, test_;
};

// Shard file names: shard_path("d/fm.h5", 1, 4) == "d/fm-00001-of-00004.h5"; shard_count 1 gives the path unchanged.
std::string shard_path(const std::string& path, int64_t index, int64_t count);

}  // namespace mirror::data
