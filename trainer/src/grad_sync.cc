// grad_sync.cc — GradientBucketer: buckets in backward order, async in-place averaging, wait before step.
#include "mirror/train/grad_sync.h"

#include <algorithm>
#include <chrono>

#include "mirror/error.h"

namespace mirror::train {

GradientBucketer::GradientBucketer(coll::Communicator& comm, float* flat_grads, std::vector<GradSlice> params,
                                   std::size_t bucket_bytes, bool overlap)
    : comm_(comm), grads_(flat_grads), bucket_of_param_(params.size()), reported_(params.size(), 0), overlap_(overlap) {
  MIRROR_CHECK(bucket_bytes > 0, kInvalidArgument, "gradient bucket size must be > 0 bytes");
  for (std::size_t i = 1; i < params.size(); ++i)
    MIRROR_CHECK(params[i].offset == params[i - 1].offset + params[i - 1].numel, kInternal,
                 "parameter " << i << " does not follow parameter " << i - 1 << " in the flat gradient buffer");
  // Walk parameters from last to first (backward's order); close a bucket once it reaches bucket_bytes.
  Bucket current;
  for (std::size_t k = params.size(); k-- > 0;) {
    current.offset = params[k].offset;  // the bucket grows downwards in the buffer
    current.numel += params[k].numel;
    current.params += 1;
    bucket_of_param_[k] = buckets_.size();
    if (current.numel * sizeof(float) >= bucket_bytes) {
      buckets_.push_back(current);
      current = Bucket{};
    }
  }
  if (current.params > 0) buckets_.push_back(current);
}

void GradientBucketer::begin_step(bool sync) {
  sync_ = sync;
  started_before_finish_ = 0;
  std::fill(reported_.begin(), reported_.end(), 0);
  for (Bucket& b : buckets_) {
    b.pending = b.params;
    b.started = false;
  }
}

void GradientBucketer::start(Bucket& b, bool async) {
  b.started = true;
  b.work = coll::Work();
  if (comm_.size() == 1 || b.numel == 0) return;
  float* g = grads_ + b.offset;
  if (async) b.work = comm_.allreduce_async(g, g, b.numel, coll::DataType::kFloat32, coll::ReduceOp::kAvg);
  else comm_.allreduce(g, g, b.numel, coll::DataType::kFloat32, coll::ReduceOp::kAvg);
}

void GradientBucketer::on_grad_ready(std::size_t index) {
  if (!sync_ || !overlap_) return;
  MIRROR_CHECK(index < bucket_of_param_.size(), kInternal, "gradient ready for unknown parameter " << index);
  Bucket& b = buckets_[bucket_of_param_[index]];
  MIRROR_CHECK(!reported_[index], kInternal, "parameter " << index << " reported ready twice in one step");
  reported_[index] = 1;
  // The last bucket of backward completes with backward itself: finish() runs it on this thread.
  if (--b.pending == 0 && &b != &buckets_.back()) {
    start(b, true);
    ++started_before_finish_;
  }
}

void GradientBucketer::finish() {
  if (!sync_) return;
  const auto t0 = std::chrono::steady_clock::now();
  // Started buckets first, then the rest blocking, in bucket order (the same on every rank): the last
  // one then runs inline, without handing over to the progress thread and back.
  for (Bucket& b : buckets_)
    if (b.started) b.work.wait();
  for (Bucket& b : buckets_)
    if (!b.started) start(b, false);
  last_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace mirror::train
