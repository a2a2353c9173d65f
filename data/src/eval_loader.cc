// eval_loader.cc — EvalLoader: rank r's contiguous part [r*N/W, (r+1)*N/W) of a split, read in batches.
#include "mirror/data/eval_loader.h"

#include <algorithm>

#include "mirror/error.h"
#include "split_reader.h"

namespace mirror::data {

struct EvalLoader::Impl {
  SplitReader reader;
  DType dtype;
  Scaling scaling;
  int64_t features;
  int64_t first, count, batch, done = 0, batches = 0;
  std::vector<char> raw;
  Impl(const Dataset& d, const std::string& split) : reader(d, split) {}
};

EvalLoader::EvalLoader(const Dataset& dataset, const std::string& split, int world_size, int rank, int64_t batch_size) {
  MIRROR_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, kInvalidArgument,
               "rank " << rank << " of world size " << world_size << " is invalid; expected 0 <= rank < world size");
  MIRROR_CHECK(batch_size >= 1, kInvalidArgument, "evaluation batch size must be >= 1, got " << batch_size);
  impl_ = std::make_unique<Impl>(dataset, split);
  Impl& m = *impl_;
  const int64_t n = m.reader.size();
  m.first = n * rank / world_size;
  m.count = n * (rank + 1) / world_size - m.first;
  m.batch = batch_size;
  m.dtype = dataset.info().x_dtype;
  m.scaling = dataset.info().scaling;
  m.features = dataset.info().features;
}

EvalLoader::~EvalLoader() = default;

bool EvalLoader::next(Batch& out) {
  Impl& m = *impl_;
  if (m.done >= m.count) return false;
  const int64_t b = std::min(m.batch, m.count - m.done);
  const int64_t first = m.first + m.done;
  out.epoch = 0;
  out.step = m.batches;
  out.size = b;
  out.wait_seconds = 0;
  out.y.resize(static_cast<std::size_t>(b));
  out.indices.resize(static_cast<std::size_t>(b));
  for (int64_t k = 0; k < b; ++k) out.indices[static_cast<std::size_t>(k)] = first + k;
  m.raw.resize(static_cast<std::size_t>(b) * m.reader.row_bytes());
  m.reader.read_range(first, b, m.raw.data(), out.y.data());
  out.x.resize(static_cast<std::size_t>(b * m.features));
  scale_to_float(m.raw.data(), m.dtype, out.x.size(), m.scaling, out.x.data());
  m.done += b;
  ++m.batches;
  return true;
}

void EvalLoader::reset() {
  impl_->done = 0;
  impl_->batches = 0;
}

int64_t EvalLoader::first_index() const { return impl_->first; }
int64_t EvalLoader::count() const { return impl_->count; }
int64_t EvalLoader::num_batches() const { return (impl_->count + impl_->batch - 1) / impl_->batch; }

}  // namespace mirror::data
