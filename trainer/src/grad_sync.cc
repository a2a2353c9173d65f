// grad_sync.cc — GradientBucketer: buckets in backward order, async in-place averaging (or reduce-scatter
// and, after the sharded optimizer step, all-gather), wait before step; 16-bit gradients through a wire buffer.
#include "mirror/train/grad_sync.h"

#include <algorithm>
#include <chrono>

#include "mirror/error.h"
#include "mirror/train/grad_compression.h"

namespace mirror::train {

GradientBucketer::GradientBucketer(coll::Communicator& comm, float* flat_grads, std::vector<GradSlice> params,
                                   std::size_t bucket_bytes, bool overlap, bool sharded, GradWire wire)
    : comm_(comm),
      grads_(flat_grads),
      bucket_of_param_(params.size()),
      reported_(params.size(), 0),
      overlap_(overlap),
      sharded_(sharded && comm.size() > 1),
      wire_(wire) {
  MIRROR_CHECK(wire_.type == coll::DataType::kFloat32 || wire_.type == coll::DataType::kBFloat16 ||
                   wire_.type == coll::DataType::kFloat16,
               kInvalidArgument, "gradients travel as float32, bfloat16 or float16, not " << coll::to_string(wire_.type));
  const std::size_t total = params.empty() ? 0 : params.back().offset + params.back().numel;
  if (narrowed() && wire_.memory == nullptr && total > 0) {
    own_wire_ = nn::Tensor(nn::Shape({static_cast<std::int64_t>((total + 1) / 2)}), wire_.device);
    wire_.memory = reinterpret_cast<std::uint16_t*>(own_wire_.data());
  }
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
  // What this rank owns after finish(), in buffer order (buckets were made from the end of the buffer).
  const auto world = static_cast<std::size_t>(comm.size()), rank = static_cast<std::size_t>(comm.rank());
  for (auto b = buckets_.rbegin(); b != buckets_.rend(); ++b) {
    if (!sharded_) {
      owned_.emplace_back(b->offset, b->offset + b->numel);
      continue;
    }
    b->block = b->numel / world;
    const std::size_t tail = b->offset + b->block * world;
    if (b->block > 0) owned_.emplace_back(b->offset + rank * b->block, b->offset + (rank + 1) * b->block);
    if (tail < b->offset + b->numel) owned_.emplace_back(tail, b->offset + b->numel);
  }
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
  b.done_ns = 0;
  if (timeline_ && timeline_->recording()) b.start_ns = telemetry::now_ns();
  b.work = b.tail_work = coll::Work();
  if (b.numel == 0) return;
  // 16-bit: the bucket's gradients (times the scale) rounded into its range of the wire buffer, which is
  // then reduced instead; with one rank the rounding is all there is (finish() widens it back).
  void* g = grads_ + b.offset;
  if (narrowed()) {
    narrow_gradients(wire_.device, grads_ + b.offset, wire_.memory + b.offset, b.numel, wire_.type, scale_);
    g = wire_.memory + b.offset;
  }
  if (comm_.size() == 1) return;
  const coll::DataType type = wire_.type;  // the type the bucket is reduced in
  constexpr auto kAvg = coll::ReduceOp::kAvg;
  const std::size_t elem = narrowed() ? sizeof(std::uint16_t) : sizeof(float);
  auto at = [g, elem](std::size_t k) { return static_cast<char*>(g) + k * elem; };
  if (!sharded_) {
    if (async) b.work = comm_.allreduce_async(g, g, b.numel, type, kAvg);
    else comm_.allreduce(g, g, b.numel, type, kAvg);
    return;
  }
  const std::size_t body = b.block * static_cast<std::size_t>(comm_.size()), tail = b.numel - body;
  void* own = at(static_cast<std::size_t>(comm_.rank()) * b.block);
  if (async) {
    if (b.block > 0) b.work = comm_.reduce_scatter_async(g, own, b.block, type, kAvg);
    if (tail > 0) b.tail_work = comm_.allreduce_async(at(body), at(body), tail, type, kAvg);
    return;
  }
  if (b.block > 0) comm_.reduce_scatter(g, own, b.block, type, kAvg);
  if (tail > 0) comm_.allreduce(at(body), at(body), tail, type, kAvg);
}

void GradientBucketer::widen_owned() {
  for (const auto& [begin, end] : owned_)
    widen_gradients(wire_.device, wire_.memory + begin, grads_ + begin, end - begin, wire_.type, 1.0f / scale_);
}

void GradientBucketer::gather(float* flat) {
  if (!sharded_) return;
  for (const Bucket& b : buckets_) {
    if (b.block == 0) continue;
    float* base = flat + b.offset;
    comm_.allgather(base + static_cast<std::size_t>(comm_.rank()) * b.block, base, b.block,
                    coll::DataType::kFloat32);
  }
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
  if (timeline_ && timeline_->recording()) note_completions();
}

void GradientBucketer::note_completions() {
  for (Bucket& b : buckets_)
    if (b.started && b.done_ns == 0 && b.work.done() && b.tail_work.done()) b.done_ns = telemetry::now_ns();
}

void GradientBucketer::record_buckets() {
  const char* what = sharded_ ? "reduce-scatter bucket " : "allreduce bucket ";
  std::int64_t previous_done = 0;
  for (std::size_t k = 0; k < buckets_.size(); ++k) {
    const Bucket& b = buckets_[k];
    const std::int64_t begin = std::max(b.start_ns, previous_done);
    timeline_->add(what + std::to_string(k), "communication", begin, std::max(begin, b.done_ns),
                   telemetry::TimelineThread::kCommunication);
    previous_done = std::max(begin, b.done_ns);
  }
}

void GradientBucketer::finish() {
  if (!sync_) return;
  const auto t0 = std::chrono::steady_clock::now();
  // Started buckets first, then the rest blocking, in bucket order (the same on every rank): the last
  // one then runs inline, without handing over to the progress thread and back.
  const bool timed = timeline_ && timeline_->recording() && comm_.size() > 1;
  if (timed) note_completions();
  for (Bucket& b : buckets_) {
    if (!b.started) continue;
    b.work.wait();
    b.tail_work.wait();
    if (timed && b.done_ns == 0) b.done_ns = telemetry::now_ns();
  }
  for (Bucket& b : buckets_) {
    if (b.started) continue;
    start(b, false);
    if (timed) b.done_ns = telemetry::now_ns();
  }
  if (timed) record_buckets();
  if (narrowed()) widen_owned();
  last_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace mirror::train
