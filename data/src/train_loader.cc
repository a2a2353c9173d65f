// train_loader.cc — TrainLoader: picks the batch source for the sharding mode (or the window source of a
// token dataset), augments its batches when asked, and runs it either on the caller's thread (prefetch_depth
// 0) or on a Prefetcher thread, timing how long next() waits.
#include "mirror/data/train_loader.h"

#include <chrono>
#include <optional>

#include "augment.h"
#include "batch_source.h"
#include "mirror/error.h"
#include "prefetcher.h"
#include "window_source.h"

namespace mirror::data {

namespace {

// A token dataset's options: a context, index sharding, no augmentation.
void check_text_options(const Dataset& dataset, const LoaderOptions& options) {
  MIRROR_CHECK(options.context >= 1, kInvalidArgument,
               "token dataset " << dataset.describe() << " needs a context (tokens per window input) >= 1, got "
                                << options.context);
  MIRROR_CHECK(options.sharding == Sharding::kIndex, kInvalidArgument,
               "--sharding files is not available for token dataset " << dataset.describe()
                   << " (a single file; every rank reads only its own windows): use --sharding index");
  MIRROR_CHECK(!options.augment.enabled(), kInvalidArgument,
               "augmentation (random crop, flip) is for image samples; token dataset " << dataset.describe()
                   << " cannot be augmented");
}

}  // namespace

const char* to_string(Sharding sharding) { return sharding == Sharding::kIndex ? "index" : "files"; }

Sharding parse_sharding(const std::string& name) {
  if (name == "index") return Sharding::kIndex;
  if (name == "files") return Sharding::kFiles;
  MIRROR_THROW(kInvalidArgument, "unknown sharding '" << name << "'; expected 'index' or 'files'");
}

struct TrainLoader::Impl {
  LoaderOptions options;
  std::unique_ptr<BatchSource> source;
  const Sampler* sampler = nullptr;        // kIndex and token datasets
  std::optional<Augmenter> augmenter;      // options.augment enabled; used by the thread that makes batches
  std::unique_ptr<Prefetcher> prefetcher;  // prefetch_depth > 0
  int64_t epoch = -1;
  int64_t next_step = 0;                   // synchronous mode
  int64_t batch = 0;

  // One step's batch: read and scaled by the source, then augmented.
  void make(int64_t epoch_of_batch, int64_t step, Batch& out) {
    source->make(step, out);
    out.epoch = epoch_of_batch;
    if (augmenter) augmenter->apply(out, epoch_of_batch);
  }
};

TrainLoader::TrainLoader(const Dataset& dataset, SamplerOptions sampler, LoaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  MIRROR_CHECK(options.prefetch_depth >= 0, kInvalidArgument,
               "prefetch depth must be >= 0, got " << options.prefetch_depth);
  MIRROR_CHECK(options.augment.crop_padding >= 0, kInvalidArgument,
               "random crop padding must be >= 0, got " << options.augment.crop_padding);
  impl_->options = options;
  impl_->batch = sampler.batch_per_rank;
  if (dataset.info().text) {
    check_text_options(dataset, options);
    auto src = std::make_unique<WindowSource>(dataset, options.split, sampler, options.context,
                                              options.chunk_cache_bytes);
    impl_->sampler = &src->sampler();
    impl_->source = std::move(src);
    return;
  }
  MIRROR_CHECK(options.context == 0, kInvalidArgument,
               "context " << options.context << " is for token datasets; dataset " << dataset.describe()
                          << " holds samples with labels (leave the context 0)");
  if (options.augment.enabled()) impl_->augmenter.emplace(options.augment, dataset.info(), sampler.seed);
  if (options.sharding == Sharding::kIndex) {
    auto src = std::make_unique<IndexSource>(dataset, options.split, sampler, options.in_memory,
                                             options.chunk_cache_bytes);
    impl_->sampler = &src->sampler();
    impl_->source = std::move(src);
  } else {
    impl_->source = std::make_unique<FileStreamSource>(dataset, options.split, sampler, options.shuffle_buffer,
                                                       options.chunk_cache_bytes);
  }
}

TrainLoader::~TrainLoader() = default;  // Prefetcher's destructor stops and joins; never throws

void TrainLoader::start_epoch(int64_t epoch, int64_t first_step) {
  Impl& m = *impl_;
  MIRROR_CHECK(epoch >= 0, kInvalidArgument, "epoch must be >= 0, got " << epoch);
  MIRROR_CHECK(first_step >= 0 && first_step <= steps_per_epoch(), kInvalidArgument,
               "first step " << first_step << " is out of range; expected 0 <= step <= " << steps_per_epoch());
  m.prefetcher.reset();  // stop any epoch in flight before touching the source
  m.source->begin(epoch, first_step);
  m.epoch = epoch;
  m.next_step = first_step;
  if (m.options.prefetch_depth > 0) {
    m.prefetcher = std::make_unique<Prefetcher>(
        m.options.prefetch_depth, [&m, epoch](int64_t step, Batch& out) { m.make(epoch, step, out); }, first_step,
        steps_per_epoch());
  }
}

bool TrainLoader::next(Batch& out) {
  Impl& m = *impl_;
  MIRROR_CHECK(m.epoch >= 0, kInvalidArgument, "TrainLoader::next called before start_epoch");
  const auto t0 = std::chrono::steady_clock::now();
  bool got = false;
  if (m.prefetcher) {
    got = m.prefetcher->pop(out);
  } else if (m.next_step < steps_per_epoch()) {
    m.make(m.epoch, m.next_step++, out);
    got = true;
  }
  out.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return got;
}

int64_t TrainLoader::steps_per_epoch() const { return impl_->source->steps_per_epoch(); }
int64_t TrainLoader::batch_per_rank() const { return impl_->batch; }
const Sampler* TrainLoader::sampler() const { return impl_->sampler; }

}  // namespace mirror::data
