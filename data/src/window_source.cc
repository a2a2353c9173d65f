// window_source.cc — WindowSource: the Sampler over a token split's windows, and the window count checks.
#include "window_source.h"

#include "mirror/error.h"

namespace mirror::data {

namespace {

// The sampler's options over `windows` windows, checked with a message in tokens, windows and context.
SamplerOptions over_windows(SamplerOptions o, const Dataset& dataset, const std::string& split, int64_t tokens,
                            int64_t windows, int64_t context) {
  const std::string where = "dataset " + dataset.describe() + " split '/" + dataset.split(split).name + "'";
  MIRROR_CHECK(o.dataset_size == 0 || o.dataset_size == windows, kInvalidArgument,
               "sampler dataset_size " << o.dataset_size << " does not match " << where << " of " << windows
                                       << " windows of context " << context << "; pass 0 or " << windows);
  o.dataset_size = windows;
  const int64_t global = static_cast<int64_t>(o.world_size) * o.batch_per_rank;
  MIRROR_CHECK(o.world_size < 1 || o.batch_per_rank < 1 || windows >= global, kInvalidArgument,
               where << " has " << tokens << " tokens = " << windows << " windows of context " << context
                     << ", fewer than one global batch of " << o.world_size << " ranks x " << o.batch_per_rank
                     << " = " << global << " windows; use a shorter context, a smaller batch or fewer ranks"
                     << " (a window is context + 1 tokens at stride context)");
  check_sampler_options(o, where);  // rank, world and batch ranges
  return o;
}

}  // namespace

WindowSource::WindowSource(const Dataset& dataset, const std::string& split, const SamplerOptions& sampler,
                           int64_t context, std::size_t chunk_cache_bytes)
    : reader_(dataset, split, context, chunk_cache_bytes),
      sampler_(over_windows(sampler, dataset, split, reader_.tokens(), reader_.windows(), context)) {}

void WindowSource::make(int64_t step, Batch& out) {
  reader_.read(sampler_.indices(epoch_, step), out);
  out.epoch = epoch_;
  out.step = step;
}

}  // namespace mirror::data
