// batch_source.cc — IndexSource (Sampler indices, memory or HDF5 rows) and FileStreamSource (own shard
// files through a shuffle buffer): how TrainLoader fills a Batch.
#include "batch_source.h"

#include <algorithm>
#include <cstring>

#include "mirror/error.h"

namespace mirror::data {

namespace {

constexpr int64_t kBlockRows = 4096;

std::string where(const Dataset& dataset, const std::string& split) {
  return "dataset " + dataset.describe() + " split '/" + dataset.split(split).name + "'";
}

SamplerOptions with_size(const Dataset& dataset, const std::string& split, SamplerOptions o) {
  const int64_t n = dataset.split(split).size;
  MIRROR_CHECK(o.dataset_size == 0 || o.dataset_size == n, kInvalidArgument,
               "sampler dataset_size " << o.dataset_size << " does not match " << where(dataset, split) << " of " << n
                                       << " samples; pass 0 or " << n);
  o.dataset_size = n;
  check_sampler_options(o, where(dataset, split));
  return o;
}

}  // namespace

IndexSource::IndexSource(const Dataset& dataset, const std::string& split, const SamplerOptions& sampler,
                         bool in_memory, std::size_t chunk_cache_bytes)
    : sampler_(with_size(dataset, split, sampler)), dtype_(dataset.info().x_dtype), scaling_(dataset.info().scaling),
      features_(dataset.info().features), row_bytes_(static_cast<std::size_t>(features_) * dtype_size(dtype_)),
      reader_(dataset, split, chunk_cache_bytes), in_memory_(in_memory) {
  if (in_memory_) {
    const int64_t n = reader_.size();
    memory_x_.resize(static_cast<std::size_t>(n) * row_bytes_);
    memory_y_.resize(static_cast<std::size_t>(n));
    for (int64_t first = 0; first < n; first += kBlockRows) {
      const int64_t count = std::min(kBlockRows, n - first);
      reader_.read_range(first, count, memory_x_.data() + static_cast<std::size_t>(first) * row_bytes_,
                         memory_y_.data() + first);
    }
  }
}

void IndexSource::make(int64_t step, Batch& out) {
  out.indices = sampler_.indices(epoch_, step);
  const std::size_t b = out.indices.size();
  out.epoch = epoch_;
  out.step = step;
  out.size = static_cast<int64_t>(b);
  out.y.resize(b);
  raw_.resize(b * row_bytes_);
  if (in_memory_) {
    for (std::size_t k = 0; k < b; ++k) {
      const auto i = static_cast<std::size_t>(out.indices[k]);
      std::memcpy(raw_.data() + k * row_bytes_, memory_x_.data() + i * row_bytes_, row_bytes_);
      out.y[k] = memory_y_[i];
    }
  } else {
    reader_.gather(out.indices, raw_.data(), out.y.data());
  }
  out.x.resize(b * static_cast<std::size_t>(features_));
  scale_to_float(raw_.data(), dtype_, out.x.size(), scaling_, out.x.data());
}

FileStreamSource::FileStreamSource(const Dataset& dataset, const std::string& split, const SamplerOptions& sampler,
                                   int64_t shuffle_buffer, std::size_t chunk_cache_bytes)
    : opt_(sampler), dtype_(dataset.info().x_dtype), scaling_(dataset.info().scaling),
      features_(dataset.info().features), row_bytes_(static_cast<std::size_t>(features_) * dtype_size(dtype_)),
      reader_(dataset, split, chunk_cache_bytes), capacity_(shuffle_buffer) {
  const SplitInfo& info = dataset.split(split);
  opt_ = with_size(dataset, split, opt_);
  MIRROR_CHECK(shuffle_buffer >= 1, kInvalidArgument, "shuffle buffer must hold >= 1 sample, got " << shuffle_buffer);
  const auto world = static_cast<std::size_t>(opt_.world_size);
  const std::size_t shards = info.shard_sizes.size();
  MIRROR_CHECK(shards >= world, kInvalidArgument,
               "--sharding files needs at least one shard file per rank: " << where(dataset, split) << " has "
                   << shards << " shard file(s) for " << world << " ranks; write it with --shards " << world
                   << " (or a multiple), or use --sharding index");
  int64_t fewest = -1;
  int fewest_rank = 0;
  for (std::size_t q = 0; q < world; ++q) {
    int64_t n = 0;
    for (std::size_t s = q; s < shards; s += world) n += info.shard_sizes[s];
    if (fewest < 0 || n < fewest) {
      fewest = n;
      fewest_rank = static_cast<int>(q);
    }
  }
  for (std::size_t s = static_cast<std::size_t>(opt_.rank); s < shards; s += world) my_shards_.push_back(s);
  steps_ = fewest / opt_.batch_per_rank;
  MIRROR_CHECK(steps_ >= 1, kInvalidArgument,
               where(dataset, split) << " with --sharding files: rank " << fewest_rank << "'s shard files hold "
                                     << fewest << " samples, fewer than one batch of " << opt_.batch_per_rank
                                     << " per rank; " << world << " ranks x batch " << fewest << " would fit");
  buf_x_.resize(static_cast<std::size_t>(capacity_) * row_bytes_);
  buf_y_.resize(static_cast<std::size_t>(capacity_));
  buf_index_.resize(static_cast<std::size_t>(capacity_));
}

void FileStreamSource::begin(int64_t epoch, int64_t first_step) {
  MIRROR_CHECK(epoch >= 0, kInvalidArgument, "epoch must be >= 0, got " << epoch);
  rng_.emplace(mix_key(opt_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(opt_.rank) + 1));
  shard_order_ = my_shards_;
  for (std::size_t i = shard_order_.size(); i > 1; --i) std::swap(shard_order_[i - 1], shard_order_[rng_->below(i)]);
  shard_pos_ = 0;
  row_in_shard_ = 0;
  buf_size_ = 0;
  // Resuming mid-epoch: replay the stream up to first_step (reads and discards those samples).
  std::vector<char> row(row_bytes_);
  int32_t y;
  int64_t index;
  for (int64_t i = 0; i < first_step * opt_.batch_per_rank; ++i) take(row.data(), &y, &index);
}

void FileStreamSource::refill() {
  while (buf_size_ < capacity_ && shard_pos_ < shard_order_.size()) {
    const std::size_t s = shard_order_[shard_pos_];
    const int64_t shard_rows = reader_.shard_offset(s + 1) - reader_.shard_offset(s);
    if (row_in_shard_ >= shard_rows) {
      ++shard_pos_;
      row_in_shard_ = 0;
      continue;
    }
    const int64_t n = std::min({kBlockRows, capacity_ - buf_size_, shard_rows - row_in_shard_});
    const int64_t first = reader_.shard_offset(s) + row_in_shard_;
    reader_.read_range(first, n, buf_x_.data() + static_cast<std::size_t>(buf_size_) * row_bytes_,
                       buf_y_.data() + buf_size_);
    for (int64_t k = 0; k < n; ++k) buf_index_[static_cast<std::size_t>(buf_size_ + k)] = first + k;
    buf_size_ += n;
    row_in_shard_ += n;
  }
}

void FileStreamSource::take(char* x_row, int32_t* y, int64_t* index) {
  if (buf_size_ <= capacity_ / 2) refill();
  MIRROR_CHECK(buf_size_ > 0, kInternal, "files sharding ran out of samples before the end of the epoch");
  const auto j = static_cast<std::size_t>(rng_->below(static_cast<uint64_t>(buf_size_)));
  const auto last = static_cast<std::size_t>(buf_size_ - 1);
  std::memcpy(x_row, buf_x_.data() + j * row_bytes_, row_bytes_);
  *y = buf_y_[j];
  *index = buf_index_[j];
  if (j != last) {
    std::memcpy(buf_x_.data() + j * row_bytes_, buf_x_.data() + last * row_bytes_, row_bytes_);
    buf_y_[j] = buf_y_[last];
    buf_index_[j] = buf_index_[last];
  }
  --buf_size_;
}

void FileStreamSource::make(int64_t step, Batch& out) {
  const auto b = static_cast<std::size_t>(opt_.batch_per_rank);
  out.step = step;
  out.size = static_cast<int64_t>(b);
  out.y.resize(b);
  out.indices.resize(b);
  raw_.resize(b * row_bytes_);
  for (std::size_t k = 0; k < b; ++k) take(raw_.data() + k * row_bytes_, &out.y[k], &out.indices[k]);
  out.x.resize(b * static_cast<std::size_t>(features_));
  scale_to_float(raw_.data(), dtype_, out.x.size(), scaling_, out.x.data());
}

}  // namespace mirror::data
