// attention_decode_cpu.h (private) — causal attention of new positions over a decode cache's keys and values
// (incremental decoding: decode_cache.h), on the CPU. A step of generation brings one new position (or a few),
// so this is a plain loop per (sample, new position, head) over the cached keys: scores, their softmax with the
// maximum subtracted, and the weighted sum of the cached values. No T×T matrix and no blocking: the work is
// one position's, O(length · C) per new position.
//
// Layouts: qkv [N, T, 3C] packed as attention_cpu.h says (q, k, v of head h at columns h·d, C + h·d, 2C + h·d);
// the cache's keys and values [N, capacity, C] each, head h at columns h·d; out [N, T, C].
#pragma once

#include <cstdint>

namespace mirror::nn::detail {

struct DecodeAttentionShape {
  std::int64_t batch = 0;
  std::int64_t positions = 0;  // T, the new positions of this forward
  std::int64_t offset = 0;     // the first new position's index in the sequence (positions cached before)
  std::int64_t capacity = 0;   // the cache's positions per sequence (>= offset + positions)
  std::int64_t channels = 0, heads = 1;
  std::int64_t head_size() const { return channels / heads; }
};

// Writes the keys and values of the new positions (from qkv) into the cache at [offset, offset + T).
void append_keys_values(const DecodeAttentionShape& s, const float* qkv, float* keys, float* values);

// out[n, i] = softmax over j <= offset + i of q[n, i]·keys[n, j]ᵀ/√d, times values[n, j], for every head; the
// new positions' keys and values must be in the cache already (append_keys_values).
void cached_attention_forward(const DecodeAttentionShape& s, const float* qkv, const float* keys, const float* values,
                              float* out);

}  // namespace mirror::nn::detail
