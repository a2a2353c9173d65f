// eval_loader.cc — EvalLoader: rank r's contiguous part [r*N/W, (r+1)*N/W) of a split, read in batches;
// N counts samples, or for a token dataset the windows of the given context (consecutive at stride T from
// the split's first token; one hyperslab read per batch).
#include "mirror/data/eval_loader.h"

#include <algorithm>
#include <optional>

#include "mirror/error.h"
#include "split_reader.h"
#include "window_reader.h"

namespace mirror::data {

struct EvalLoader::Impl {
  std::optional<SplitReader> reader;   // a dataset of samples
  std::optional<WindowReader> windows; // a token dataset
  DType dtype = DType::kUInt8;
  Scaling scaling;
  int64_t features = 0;
  int64_t first = 0, count = 0, batch = 0, done = 0, batches = 0;
  std::vector<char> raw;
  std::vector<int64_t> window_ids;
};

EvalLoader::EvalLoader(const Dataset& dataset, const std::string& split, int world_size, int rank, int64_t batch_size,
                       int64_t context) {
  MIRROR_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, kInvalidArgument,
               "rank " << rank << " of world size " << world_size << " is invalid; expected 0 <= rank < world size");
  MIRROR_CHECK(batch_size >= 1, kInvalidArgument, "evaluation batch size must be >= 1, got " << batch_size);
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  int64_t n = 0;
  if (dataset.info().text) {
    m.windows.emplace(dataset, split, context);  // checks context >= 1
    n = m.windows->windows();
    MIRROR_CHECK(n >= 1, kInvalidArgument,
                 "dataset " << dataset.describe() << " split '/" << dataset.split(split).name << "' has "
                            << m.windows->tokens() << " tokens = 0 windows of context " << context
                            << "; evaluation needs at least " << context + 1 << " tokens (use a shorter context)");
  } else {
    MIRROR_CHECK(context == 0, kInvalidArgument,
                 "context " << context << " is for token datasets; dataset " << dataset.describe()
                            << " holds samples with labels (leave the context 0)");
    m.reader.emplace(dataset, split);
    n = m.reader->size();
    m.dtype = dataset.info().x_dtype;
    m.scaling = dataset.info().scaling;
    m.features = dataset.info().features;
  }
  m.first = n * rank / world_size;
  m.count = n * (rank + 1) / world_size - m.first;
  m.batch = batch_size;
}

EvalLoader::~EvalLoader() = default;

bool EvalLoader::next(Batch& out) {
  Impl& m = *impl_;
  if (m.done >= m.count) return false;
  const int64_t b = std::min(m.batch, m.count - m.done);
  const int64_t first = m.first + m.done;
  out.epoch = 0;
  out.step = m.batches;
  out.wait_seconds = 0;
  if (m.windows) {
    m.window_ids.resize(static_cast<std::size_t>(b));
    for (int64_t k = 0; k < b; ++k) m.window_ids[static_cast<std::size_t>(k)] = first + k;
    m.windows->read(m.window_ids, out);  // consecutive windows: one read
  } else {
    out.size = b;
    out.tokens.clear();
    out.y.resize(static_cast<std::size_t>(b));
    out.indices.resize(static_cast<std::size_t>(b));
    for (int64_t k = 0; k < b; ++k) out.indices[static_cast<std::size_t>(k)] = first + k;
    m.raw.resize(static_cast<std::size_t>(b) * m.reader->row_bytes());
    m.reader->read_range(first, b, m.raw.data(), out.y.data());
    out.x.resize(static_cast<std::size_t>(b * m.features));
    scale_to_float(m.raw.data(), m.dtype, out.x.size(), m.scaling, out.x.data());
  }
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
