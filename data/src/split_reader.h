// split_reader.h — SplitReader (private): reads rows of one split of a dataset, addressed by global index
// (shard files concatenated in order), straight from HDF5. Sorted neighbouring indices are coalesced into
// one hyperslab read per run (gaps of up to kMaxGap rows are read and discarded): HDF5 1.10 reads a
// union-of-hyperslabs selection far more slowly than the same rows as one read per run. Each reader opens its
// own file handles; one reader is used by one thread at a time. Every float32 block read is checked for
// NaN/Inf (finite_check.h) as it arrives: on the in-memory load, per batch, per streamed block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "h5.h"
#include "mirror/data/dataset.h"

namespace mirror::data {

class SplitReader {
 public:
  static constexpr int64_t kMaxGap = 8;

  SplitReader(const Dataset& dataset, const std::string& split, std::size_t chunk_cache_bytes = 64u << 20);

  int64_t size() const { return size_; }
  std::size_t row_bytes() const { return row_bytes_; }
  // Start of shard s in global index space.
  int64_t shard_offset(std::size_t s) const { return offsets_[s]; }

  // Rows [first, first + count) as stored (raw dtype) into x (count * row_bytes()) and their labels into y.
  void read_range(int64_t first, int64_t count, void* x, int32_t* y);
  // Rows `indices` (any order, repeats allowed) as stored, row i of the output for indices[i].
  void gather(const std::vector<int64_t>& indices, void* x, int32_t* y);

  // HDF5 reads issued so far (after coalescing), for tests and benchmarks.
  int64_t reads_issued() const { return reads_; }

 private:
  struct Shard {
    std::string path;
    h5::Id file, x, y;
    int64_t size = 0;
  };
  void read_in_shard(std::size_t s, int64_t local_first, int64_t count, char* x, int32_t* y);
  // Throws kFormat naming split, global sample and feature when float rows just read hold a NaN or Inf.
  void check_finite(std::size_t s, int64_t local_first, int64_t count, const float* x) const;

  std::string split_;
  DType dtype_;
  std::size_t row_bytes_ = 0;
  int64_t size_ = 0;
  std::vector<Shard> shards_;
  std::vector<int64_t> offsets_;  // size shards_.size() + 1
  std::vector<char> scratch_x_;
  std::vector<int32_t> scratch_y_;
  int64_t reads_ = 0;
};

// Converts n stored values to float with the dataset's scaling: float(v * (scale / std) - mean / std).
void scale_to_float(const void* raw, DType dtype, std::size_t n, const Scaling& scaling, float* out);

}  // namespace mirror::data
