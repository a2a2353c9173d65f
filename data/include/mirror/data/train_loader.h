// mirror/data/train_loader.h — TrainLoader: this rank's batches of one epoch, read from HDF5 (or from an
// in-memory copy of the split) and converted to float, prepared by a background thread while the
// previous batch trains.
//
// Sharding::kIndex (default): batches follow the Sampler (see sampler.h), so N ranks with batch B see
// exactly what one rank with batch N*B sees. Every rank can reach every sample, so in_memory loads the
// whole split (as stored: uint8 stays uint8); without in_memory each batch's rows are read from HDF5 with
// neighbouring indices coalesced.
// Sharding::kFiles: for datasets larger than one machine's memory. Rank r reads only shard files
// s with s % W == r (needs at least W shard files), in an order drawn from (seed, epoch, rank), row
// blocks in sequence, shuffled through a buffer of shuffle_buffer samples. Every rank runs the same number
// of steps (that of the rank with the fewest samples); the rest of a rank's samples are dropped. This gives
// up the exact N-ranks-equal-one-rank equivalence of kIndex: which samples meet in a step depends on W.
// Token datasets (DatasetInfo::text): LoaderOptions::context = T >= 1 cuts the split into windows of T + 1
// tokens at stride T (mirror/data/windows.h); the Sampler permutes window indices as it permutes samples
// (kIndex's equivalence holds), and each batch holds `tokens` (inputs) and `y` (targets), size x T each,
// read from HDF5 window by window (only this rank's windows; in_memory does not apply). kFiles and
// augmentation are refused for token datasets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mirror/data/batch.h"
#include "mirror/data/dataset.h"
#include "mirror/data/sampler.h"

namespace mirror::data {

enum class Sharding { kIndex, kFiles };
const char* to_string(Sharding sharding);
Sharding parse_sharding(const std::string& name);  // "index" | "files"; throws kInvalidArgument

// Help text of a --sharding flag, for every program that offers one (trainer, mirror-data bench).
inline constexpr const char* kShardingHelp =
    "How ranks split the training data: 'index' (default) - every epoch a permutation from (seed, epoch), "
    "each rank its slice of every global batch, so N ranks x batch B train exactly like 1 rank x batch N*B; "
    "'files' - for data larger than memory: rank r reads only shard files s with s % N == r, sequentially, "
    "shuffled through a buffer; needs >= N shard files (mirror-data --shards) and gives up the exact "
    "N-ranks-equal-1-rank equivalence";

// Augmentation of training samples, applied in the loader thread to image samples (sample_shape [H, W] or
// [C, H, W]) after scaling: a random crop with padding (pad crop_padding pixels of value 0 as stored,
// i.e. -x_mean/x_std after scaling, on every side, then crop back to H x W at a random offset), then a
// horizontal flip with probability 1/2. The draws are a counter-based hash of (seed, epoch, global sample
// index) with no shared generator state, so a sample is augmented the same way whatever the rank count,
// prefetch depth or resume point: N ranks x batch B still see exactly what 1 rank x batch N*B sees.
// Evaluation is never augmented.
struct AugmentOptions {
  int64_t crop_padding = 0;  // P >= 0; 0: no random crop
  bool hflip = false;
  bool enabled() const { return crop_padding > 0 || hflip; }
};

struct LoaderOptions {
  std::string split = "train";
  int prefetch_depth = 2;        // batches prepared ahead by a background thread; 0 = synchronous
  bool in_memory = true;         // kIndex only: load the whole split into memory once
  Sharding sharding = Sharding::kIndex;
  int64_t shuffle_buffer = 8192; // kFiles only: samples in the shuffle buffer
  std::size_t chunk_cache_bytes = 64u << 20;  // HDF5 chunk cache per x dataset
  AugmentOptions augment;        // the seed is the sampler's
  int64_t context = 0;           // token datasets: tokens per window input, T >= 1 (required); 0 for samples
};

class TrainLoader {
 public:
  // sampler.dataset_size may be 0 (it is taken from the split); otherwise it must equal the split's size
  // (token datasets: its window count). Throws (before any thread starts) for bad options, a missing split,
  // fewer samples than one global batch (saying how many ranks x batch would fit), kFiles with fewer shard
  // files than ranks, or augmentation of samples that are not images; for a token dataset, a context < 1,
  // fewer windows than one global batch (saying tokens, windows and context), kFiles or augmentation; a
  // context != 0 for a dataset of samples.
  TrainLoader(const Dataset& dataset, SamplerOptions sampler, LoaderOptions options = {});
  ~TrainLoader();  // stops the prefetch thread; never throws
  TrainLoader(const TrainLoader&) = delete;
  TrainLoader& operator=(const TrainLoader&) = delete;

  // Starts (or restarts) epoch `epoch` at step `first_step` (resume); any prefetching of another epoch
  // is stopped first.
  void start_epoch(int64_t epoch, int64_t first_step = 0);
  // The next batch of the current epoch; false at the end of the epoch. Rethrows an error of the
  // prefetch thread (e.g. a read failure) on the calling thread.
  bool next(Batch& out);

  int64_t steps_per_epoch() const;
  int64_t batch_per_rank() const;
  // The Sampler of kIndex mode and of token datasets (over windows); nullptr in kFiles mode.
  const Sampler* sampler() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mirror::data
