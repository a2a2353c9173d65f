// window_source.h — WindowSource (private): TrainLoader's batch source for a token dataset. The Sampler
// permutes the window indices of the split (mirror/data/windows.h) exactly as it permutes samples, so N
// ranks x B windows see, step for step, what 1 rank x N*B windows sees; each rank reads from HDF5 only
// the T + 1 tokens of each window of its own slice (WindowReader).
#pragma once

#include <cstdint>
#include <string>

#include "batch_source.h"
#include "window_reader.h"

namespace mirror::data {

class WindowSource : public BatchSource {
 public:
  // Throws kInvalidArgument for context < 1, a sampler dataset_size that is neither 0 nor the window
  // count, or a split with fewer windows than one global batch (world x batch).
  WindowSource(const Dataset& dataset, const std::string& split, const SamplerOptions& sampler, int64_t context,
               std::size_t chunk_cache_bytes);
  int64_t steps_per_epoch() const override { return sampler_.steps_per_epoch(); }
  void begin(int64_t epoch, int64_t /*first_step*/) override { epoch_ = epoch; }
  void make(int64_t step, Batch& out) override;
  const Sampler& sampler() const { return sampler_; }

 private:
  WindowReader reader_;
  Sampler sampler_;
  int64_t epoch_ = 0;
};

}  // namespace mirror::data
