// batch_source.h — the two ways TrainLoader makes a step's batch (private):
//   IndexSource — the Sampler's indices, rows from memory or gathered from HDF5 (Sharding::kIndex);
//   FileStreamSource — this rank's shard files read in sequence through a shuffle buffer (Sharding::kFiles).
// begin() is called with no make() running; make() is called for consecutive steps from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "mirror/data/batch.h"
#include "mirror/data/dataset.h"
#include "mirror/data/sampler.h"
#include "rng.h"
#include "split_reader.h"

namespace mirror::data {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t steps_per_epoch() const = 0;
  virtual void begin(int64_t epoch, int64_t first_step) = 0;
  virtual void make(int64_t step, Batch& out) = 0;
};

class IndexSource : public BatchSource {
 public:
  IndexSource(const Dataset& dataset, const std::string& split, const SamplerOptions& sampler, bool in_memory,
              std::size_t chunk_cache_bytes);
  int64_t steps_per_epoch() const override { return sampler_.steps_per_epoch(); }
  void begin(int64_t epoch, int64_t first_step) override { epoch_ = epoch; }
  void make(int64_t step, Batch& out) override;
  const Sampler& sampler() const { return sampler_; }

 private:
  Sampler sampler_;
  DType dtype_;
  Scaling scaling_;
  int64_t features_;
  std::size_t row_bytes_;
  SplitReader reader_;
  std::vector<char> memory_x_;     // in_memory: the whole split as stored
  std::vector<int32_t> memory_y_;
  bool in_memory_;
  int64_t epoch_ = 0;
  std::vector<char> raw_;
};

class FileStreamSource : public BatchSource {
 public:
  FileStreamSource(const Dataset& dataset, const std::string& split, const SamplerOptions& sampler,
                   int64_t shuffle_buffer, std::size_t chunk_cache_bytes);
  int64_t steps_per_epoch() const override { return steps_; }
  void begin(int64_t epoch, int64_t first_step) override;
  void make(int64_t step, Batch& out) override;

 private:
  // Takes one sample out of the shuffle buffer (refilling it from the stream) into x_row/y/index.
  void take(char* x_row, int32_t* y, int64_t* index);
  void refill();

  SamplerOptions opt_;
  DType dtype_;
  Scaling scaling_;
  int64_t features_;
  std::size_t row_bytes_;
  SplitReader reader_;
  std::vector<std::size_t> my_shards_;
  int64_t steps_ = 0;
  int64_t capacity_;
  // Epoch state.
  std::optional<Rng> rng_;
  std::vector<std::size_t> shard_order_;
  std::size_t shard_pos_ = 0;
  int64_t row_in_shard_ = 0;
  std::vector<char> buf_x_;
  std::vector<int32_t> buf_y_;
  std::vector<int64_t> buf_index_;
  int64_t buf_size_ = 0;
  std::vector<char> raw_;
};

}  // namespace mirror::data
