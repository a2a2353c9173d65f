// attention_decode_cpu.cc — attention_decode_cpu.h: the cache writes, and one query's attention over the cached
// positions as three plain loops (scores, softmax, weighted sum of values).
#include "attention_decode_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace mirror::nn::detail {
namespace {

// out_row[0, d) = softmax(q·Kᵀ·scale)·V over the first `length` cached rows of one head (row stride `ld`).
void attend_one_query(const float* q, const float* keys, const float* values, std::int64_t length, std::int64_t ld,
                      std::int64_t d, float scale, std::vector<float>& scores, float* out_row) {
  float max_score = -std::numeric_limits<float>::infinity();
  for (std::int64_t j = 0; j < length; ++j) {
    const float* k = keys + j * ld;
    float dot = 0.0f;
    for (std::int64_t c = 0; c < d; ++c) dot += q[c] * k[c];
    scores[static_cast<std::size_t>(j)] = dot * scale;
    max_score = std::max(max_score, scores[static_cast<std::size_t>(j)]);
  }
  float sum = 0.0f;
  for (std::int64_t j = 0; j < length; ++j) {
    float& p = scores[static_cast<std::size_t>(j)];
    p = std::exp(p - max_score);
    sum += p;
  }
  std::fill(out_row, out_row + d, 0.0f);
  for (std::int64_t j = 0; j < length; ++j) {
    const float w = scores[static_cast<std::size_t>(j)] / sum;
    const float* v = values + j * ld;
    for (std::int64_t c = 0; c < d; ++c) out_row[c] += w * v[c];
  }
}

}  // namespace

void append_keys_values(const DecodeAttentionShape& s, const float* qkv, float* keys, float* values) {
  const std::int64_t c = s.channels;
  const std::size_t row_bytes = static_cast<std::size_t>(c) * sizeof(float);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t i = 0; i < s.positions; ++i) {
      const float* in = qkv + (n * s.positions + i) * 3 * c;
      const std::int64_t at = (n * s.capacity + s.offset + i) * c;
      std::memcpy(keys + at, in + c, row_bytes);
      std::memcpy(values + at, in + 2 * c, row_bytes);
    }
}

void cached_attention_forward(const DecodeAttentionShape& s, const float* qkv, const float* keys, const float* values,
                              float* out) {
  const std::int64_t c = s.channels, d = s.head_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> scores(static_cast<std::size_t>(s.offset + s.positions));
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t i = 0; i < s.positions; ++i)
      for (std::int64_t h = 0; h < s.heads; ++h) {
        const float* q = qkv + (n * s.positions + i) * 3 * c + h * d;
        const std::int64_t cached = n * s.capacity * c + h * d;
        attend_one_query(q, keys + cached, values + cached, s.offset + i + 1, c, d, scale, scores,
                         out + (n * s.positions + i) * c + h * d);
      }
}

}  // namespace mirror::nn::detail
