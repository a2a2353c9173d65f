// mirror/train/grad_sync.h — data-parallel gradient averaging in buckets, overlapped with backward.
//
// The gradients of all parameters live in one flat buffer. Buckets group parameters in the order backward
// produces them (last layer first) into contiguous ranges of about `bucket_bytes`; as soon as backward reports
// every gradient of a bucket ready, that bucket's in-place average (allreduce avg) starts asynchronously, so
// communication runs while backward computes the earlier layers. The last bucket (it holds the first
// layer's gradients, which backward produces last) is left to finish(), which waits for the others and then
// runs the rest blocking on the calling thread: nothing is left to overlap it with, and a blocking call
// saves the hand-off to the communicator's progress thread and back. finish() returns when every bucket is averaged, before the optimizer step. Every rank launches the buckets in the same order, because backward runs in the same order.
//
// 16-bit gradients (GradWire, --grad-dtype): a bucket is first rounded to the wire type (times the loss
// scale) into the same range of a 16-bit buffer, which is what gets reduced; finish() widens the ranges this
// rank owns back into the float32 gradients (divided by the scale). With one rank the same round trip runs
// without a collective (grad_compression.h has the rule). The buckets are the same for every wire type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"
#include "mirror/telemetry/timeline.h"

namespace mirror::train {

// The type gradients travel in. kFloat32: reduced in place in the gradient buffer. kBFloat16/kFloat16: through
// a 16-bit buffer of as many elements as the gradients, in `device`'s memory: `memory` (e.g. a shared buffer
// of the communicator), or one the bucketer allocates when null.
struct GradWire {
  coll::DataType type = coll::DataType::kFloat32;
  std::uint16_t* memory = nullptr;
  nn::Device device;
};

struct GradSlice {
  std::size_t offset = 0;  // in elements, in the flat gradient buffer
  std::size_t numel = 0;
};

class GradientBucketer {
 public:
  // `params` in model order (their slices tile the buffer in order); backward reports them in reverse order.
  GradientBucketer(coll::Communicator& comm, float* flat_grads, std::vector<GradSlice> params,
                   std::size_t bucket_bytes, bool overlap = true, bool sharded = false, GradWire wire = {});

  // Arms the buckets for one backward pass. sync=false (an accumulation micro-step) makes on_grad_ready a no-op.
  void begin_step(bool sync);
  // 16-bit wire only: the loss scale the next step's gradients are multiplied by before rounding (and divided
  // by after); a power of two. 1 by default.
  void set_scale(float scale) { scale_ = scale; }
  coll::DataType wire_type() const { return wire_.type; }
  // Called by backward when parameter `index`'s gradient is final.
  void on_grad_ready(std::size_t index);
  // Starts whatever has not started (all buckets, when overlap is off) and waits for every bucket.
  void finish();

  // Whether buckets are reduce-scattered (sharded and more than one rank).
  bool sharded() const { return sharded_; }
  // The elements [begin, end) of the flat buffer whose averaged gradients this rank holds after finish():
  // everything unless sharded; sharded, the ranks' ranges partition the buffer. Sorted.
  const std::vector<std::pair<std::size_t, std::size_t>>& owned_ranges() const { return owned_; }
  // Sharded only (a no-op otherwise): blocking in-place all-gather of every bucket's blocks of `flat`
  // (a buffer with the gradients' layout, e.g. the parameters or an optimizer state), so that every rank
  // holds each block as its owner has it. Collective: every rank calls it.
  void gather(float* flat);

  std::size_t bucket_count() const { return buckets_.size(); }
  // Elements in bucket b, and how many buckets were started before finish() in the last step (overlap; at
  // most bucket_count() - 1).
  std::size_t bucket_numel(std::size_t b) const { return buckets_[b].numel; }
  std::size_t started_before_finish() const { return started_before_finish_; }
  double last_wait_seconds() const { return last_wait_seconds_; }
  // Records each bucket's reduction on the timeline's communication track while it records: from the later
  // of its start and the previous bucket's completion (the communicator runs them in order) to when this
  // thread first saw it complete (checked at every gradient backward reports, and in finish()).
  void set_timeline(telemetry::Timeline* timeline) { timeline_ = timeline; }

 private:
  struct Bucket {
    std::size_t offset = 0, numel = 0;
    std::size_t params = 0;     // parameters in it
    std::size_t pending = 0;    // not yet ready in this step
    std::size_t block = 0;      // sharded: elements per rank (the tail, numel - block * size, is all-reduced)
    bool started = false;
    coll::Work work, tail_work;
    std::int64_t start_ns = 0, done_ns = 0;  // timeline only
  };
  void start(Bucket& b, bool async);
  bool narrowed() const { return wire_.type != coll::DataType::kFloat32; }
  void widen_owned();                         // 16-bit wire: the owned ranges back into the gradients
  void note_completions();                    // timeline: stamps started buckets seen complete
  void record_buckets();                      // timeline: one span per bucket of the step

  coll::Communicator& comm_;
  float* grads_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_param_;
  std::vector<char> reported_;  // per parameter, in this step
  bool overlap_;
  bool sharded_;
  GradWire wire_;
  nn::Tensor own_wire_;  // the 16-bit buffer when GradWire::memory is null (floats holding 2 halves each)
  float scale_ = 1.0f;
  std::vector<std::pair<std::size_t, std::size_t>> owned_;
  bool sync_ = true;
  std::size_t started_before_finish_ = 0;
  double last_wait_seconds_ = 0.0;
  telemetry::Timeline* timeline_ = nullptr;
};

}  // namespace mirror::train
