// attention_cpu.h (private) — causal scaled dot-product attention on the CPU, blocked with an online softmax
// (the FlashAttention scheme, Dao et al. 2022): queries and keys go in blocks of kAttentionBlock positions, each
// block's scores are one sgemm, the softmax is carried along as a running maximum and sum per query, and only the
// log-sum-exp of each query row is kept for backward, which recomputes the probabilities block by block. No T×T
// matrix is stored: memory is O(T·d) per head whatever the context.
//
// Layout: q, k and v of head h at position t of sample n sit in the packed projection qkv [N, T, 3C] at columns
// h·d, C + h·d and 2C + h·d (d = C / heads; GPT-2's c_attn order). The output is [N, T, C] with head h at columns
// h·d (heads concatenated, ready for the output projection).
#pragma once

#include <cstdint>

#include "mirror/nn/tensor.h"

namespace mirror::nn::detail {

inline constexpr std::int64_t kAttentionBlock = 64;

struct AttentionShape {
  std::int64_t batch = 0, positions = 0, channels = 0, heads = 1;
  std::int64_t head_size() const { return channels / heads; }
};

// out = softmax(q·kᵀ/√d, causal)·v for every sample and head; lse [N, heads, T] = the log-sum-exp of each
// query's scaled scores (what backward needs).
void causal_attention_forward(const AttentionShape& s, const float* qkv, float* out, float* lse);

// dqkv [N, T, 3C] (overwritten) from d_out [N, T, C], with the forward's qkv, out and lse.
void causal_attention_backward(const AttentionShape& s, const float* qkv, const float* out, const float* lse,
                               const float* d_out, float* dqkv);

// The same with bfloat16 operands (precision.h): qkv rounded to bfloat16 by the caller, d_out rounded here, each
// block of probabilities rounded as it enters a product; scores, softmax, out, lse and dqkv stay float32.
void causal_attention_forward_bf16(const AttentionShape& s, const BFloat16* qkv, float* out, float* lse);
void causal_attention_backward_bf16(const AttentionShape& s, const BFloat16* qkv, const float* out, const float* lse,
                                    const float* d_out, float* dqkv);

}  // namespace mirror::nn::detail
