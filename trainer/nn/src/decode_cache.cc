// decode_cache.cc — mirror/nn/decode_cache.h: the slots' checks and (re)shaping; the attention layer fills them.
#include "mirror/nn/decode_cache.h"

#include "mirror/error.h"

namespace mirror::nn {

DecodeCache::DecodeCache(std::int64_t capacity, Device device) : capacity_(capacity), device_(device) {
  MIRROR_CHECK(capacity >= 1, kInvalidArgument, "a decode cache needs a capacity of >= 1 positions, got " << capacity);
}

DecodeCache::Slot& DecodeCache::extend(const void* owner, std::int64_t batch, std::int64_t channels,
                                       std::int64_t offset, std::int64_t count) {
  MIRROR_CHECK(batch >= 1 && channels >= 1 && count >= 1 && offset >= 0, kInvalidArgument,
               "decode cache: batch " << batch << ", " << channels << " channels, " << count
                                      << " new positions from position " << offset << " (expected all >= 1, offset >= 0)");
  MIRROR_CHECK(offset + count <= capacity_, kInvalidArgument,
               "decode cache: positions [" << offset << ", " << offset + count << ") go past the model's context of "
                                           << capacity_ << " positions; crop the sequence and start again from 0");
  auto [it, added] = slots_.try_emplace(owner);
  Slot& slot = it->second;
  if (added) {
    slot.keys = Tensor({0}, device_);
    slot.values = Tensor({0}, device_);
  }
  if (offset == 0) {
    slot.batch = batch;
    slot.channels = channels;
    slot.keys.resize({batch, capacity_, channels});
    slot.values.resize({batch, capacity_, channels});
  } else {
    MIRROR_CHECK(offset <= slot.length, kInvalidArgument,
                 "decode cache: a forward from position " << offset << " but only positions [0, " << slot.length
                                                          << ") are cached");
    MIRROR_CHECK(batch == slot.batch && channels == slot.channels, kInvalidArgument,
                 "decode cache: a forward of batch " << batch << " × " << channels
                                                     << " channels continues sequences cached as batch " << slot.batch
                                                     << " × " << slot.channels << " channels");
  }
  slot.length = offset + count;
  return slot;
}

}  // namespace mirror::nn
