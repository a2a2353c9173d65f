// mirror/data/batch.h — Batch: one rank's samples of one step, converted to float with the dataset's scaling.
#pragma once

#include <cstdint>
#include <vector>

namespace mirror::data {

struct Batch {
  int64_t epoch = 0;
  int64_t step = 0;                // step within the epoch (eval: batch number within this rank's part)
  int64_t size = 0;                // samples in this batch
  std::vector<float> x;            // size x features, row-major, scaled
  std::vector<int32_t> y;          // size class ids
  std::vector<int64_t> indices;    // global sample index of each row (shards concatenated in order)
  double wait_seconds = 0.0;       // time the consumer waited in next() for this batch
};

}  // namespace mirror::data
