// mirror/data/batch.h — Batch: one rank's samples of one step, converted to float with the dataset's scaling;
// for a token dataset, one rank's windows of one step (input ids and next-token targets).
#pragma once

#include <cstdint>
#include <vector>

namespace mirror::data {

struct Batch {
  int64_t epoch = 0;
  int64_t step = 0;                // step within the epoch (eval: batch number within this rank's part)
  int64_t size = 0;                // samples (token datasets: windows) in this batch
  std::vector<float> x;            // size x features, row-major, scaled (empty for a token dataset)
  std::vector<int32_t> y;          // size class ids; token dataset: size x context targets (window tokens 1..T)
  std::vector<int32_t> tokens;     // token dataset: size x context input ids (window tokens 0..T-1); else empty
  std::vector<int64_t> indices;    // global sample index of each row (shards concatenated in order); token
                                   // dataset: window index i (the window starts at token i * context)
  double wait_seconds = 0.0;       // time the consumer waited in next() for this batch
};

}  // namespace mirror::data
