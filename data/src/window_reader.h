// window_reader.h — WindowReader (private): fills a Batch with windows of a token split (the rule of
// mirror/data/windows.h): for each window i, its T input ids (tokens i*T .. i*T+T-1) and its T targets
// (tokens i*T+1 .. i*T+T). Only the windows asked for are read, with one hyperslab read per run of nearby
// windows (sorted; a run may skip up to kMaxGapTokens tokens, read and discarded). Used by the training
// source (the Sampler's windows) and by EvalLoader (consecutive windows: one read per batch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mirror/data/batch.h"
#include "mirror/data/dataset.h"
#include "token_reader.h"

namespace mirror::data {

class WindowReader {
 public:
  static constexpr int64_t kMaxGapTokens = 1024;

  // Throws kInvalidArgument unless the dataset is a token dataset and context >= 1.
  WindowReader(const Dataset& dataset, const std::string& split, int64_t context,
               std::size_t chunk_cache_bytes = 64u << 20);

  int64_t context() const { return context_; }
  int64_t tokens() const { return reader_.size(); }
  int64_t windows() const { return windows_; }

  // Sets out.size, out.indices = windows, out.tokens and out.y (size x context each, in the order of
  // `windows`); clears out.x. Every window must be in [0, windows()).
  void read(const std::vector<int64_t>& windows, Batch& out);

  int64_t reads_issued() const { return reader_.reads_issued(); }

 private:
  TokenReader reader_;
  int64_t context_ = 0, windows_ = 0;
  std::vector<std::size_t> order_;
  std::vector<int32_t> run_;
};

}  // namespace mirror::data
