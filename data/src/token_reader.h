// token_reader.h — TokenReader (private): reads ranges of one split's tokens of a token dataset
// (docs/dataset-format.md, "Token datasets") straight from HDF5 with hyperslab reads, through a file handle
// it keeps open. Every token read is checked against vocab_size again (the file may have changed since
// Dataset::open checked it), so a caller always gets ids in [0, vocab_size) as int32. One reader is used by
// one thread at a time; each reader opens its own handles, in the thread that builds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "h5.h"
#include "mirror/data/dataset.h"

namespace mirror::data {

class TokenReader {
 public:
  TokenReader(const Dataset& dataset, const std::string& split, std::size_t chunk_cache_bytes = 64u << 20);

  int64_t size() const { return size_; }  // tokens in the split

  // Tokens [first, first + count) into out (count ids).
  void read(int64_t first, int64_t count, int32_t* out);

  // HDF5 reads issued so far, for tests and benchmarks.
  int64_t reads_issued() const { return reads_; }

 private:
  std::string path_, name_;  // file and dataset ("/train/tokens"), for messages
  h5::Id file_, tokens_;
  int64_t size_ = 0, vocab_ = 0;
  std::vector<uint32_t> scratch_;
  int64_t reads_ = 0;
};

}  // namespace mirror::data
