// mirror/nn/decode_cache.h — DecodeCache: the keys and values that incremental decoding (text generation)
// keeps between forwards, one slot per causal_self_attention layer, so that a forward over new positions
// attends over what earlier forwards cached instead of recomputing the whole sequence: each new token costs
// one position's work.
//
// Use: Model::forward(ids [N, T], context) with context.cache = &cache and context.position_offset = p, the
// ids of positions [p, p + T) of N sequences. position_embedding adds its rows [p, p + T); every attention
// layer keeps its cached positions [0, p) (forgetting any after them: p = 0 starts afresh, as after cropping a
// window to the context), appends the new keys and values and attends over positions [0, p + T), causally
// within the new ones. A position at or past the capacity is refused. A forward with a cache has no backward.
#pragma once

#include <cstdint>
#include <map>

#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

class DecodeCache {
 public:
  // The keys and values one attention layer cached: keys and values [batch, capacity, channels] each, in the
  // cache's device memory, the positions [0, length) of every sequence filled.
  struct Slot {
    std::int64_t batch = 0, channels = 0, length = 0;
    Tensor keys, values;
  };

  // capacity: the most positions a slot holds (the model's context); kInvalidArgument when < 1. device: where the
  // slots live (the model's device).
  explicit DecodeCache(std::int64_t capacity, Device device = Device{});

  std::int64_t capacity() const { return capacity_; }

  // The slot of `owner` (an attention layer) with its positions [0, offset) kept and length offset + count, for
  // the caller to fill positions [offset, offset + count). kInvalidArgument, naming the positions, when the
  // offset skips positions never cached (offset > length), when offset + count exceeds the capacity, or when a
  // continued sequence (offset > 0) changes the batch or channel count; offset 0 (re)shapes the slot.
  Slot& extend(const void* owner, std::int64_t batch, std::int64_t channels, std::int64_t offset, std::int64_t count);

  // Forgets every slot (their memory included).
  void clear() { slots_.clear(); }

 private:
  std::int64_t capacity_;
  Device device_;
  std::map<const void*, Slot> slots_;
};

}  // namespace mirror::nn
