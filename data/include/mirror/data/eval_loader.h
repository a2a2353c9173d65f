// mirror/data/eval_loader.h — EvalLoader: rank r's contiguous part of a split, in order, so that the ranks
// together cover every sample exactly once. Parts differ in size by at most one sample (rank r gets
// [r*N/W, (r+1)*N/W)); batches hold up to batch_size samples, the last one may be short. A rank's part
// may be empty when N < W.
// For a token dataset the units are windows of `context` (mirror/data/windows.h): N = window_count(tokens,
// context), windows consecutive at stride context from the split's first token; each batch holds `tokens`
// and `y` (size x context each) and `indices` = window indices; first_index/count/num_batches count windows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mirror/data/batch.h"
#include "mirror/data/dataset.h"

namespace mirror::data {

class EvalLoader {
 public:
  // context: tokens per window input, required >= 1 for a token dataset (which must then have at least one
  // window) and 0 for a dataset of samples; throws kInvalidArgument otherwise.
  EvalLoader(const Dataset& dataset, const std::string& split, int world_size, int rank, int64_t batch_size,
             int64_t context = 0);
  ~EvalLoader();
  EvalLoader(const EvalLoader&) = delete;
  EvalLoader& operator=(const EvalLoader&) = delete;

  // The next batch of this rank's part; false when the part is done (reset() starts over).
  bool next(Batch& out);
  void reset();

  int64_t first_index() const;  // global index of this rank's first sample (token dataset: window)
  int64_t count() const;        // samples (windows) in this rank's part
  int64_t num_batches() const;  // ceil(count / batch_size)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mirror::data
