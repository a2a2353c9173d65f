// attention_cuda.h (private) — causal self-attention on CUDA (the layout of attention_cpu.h: qkv [N, T, 3C] with
// head h's q, k, v at columns h·d, C + h·d, 2C + h·d; out [N, T, C]). Per sample, cuBLAS strided-batched sgemms over
// the heads (stride d between heads' columns) with the whole T×T matrix of each head: scores q·kᵀ/√d, a causal
// softmax kernel (one block per row, a fixed reduction tree), P·V; backward dP = dO·Vᵀ, dV = Pᵀ·dO,
// dS = P ∘ (dP − rowsum(P ∘ dP)), dQ = dS·K/√d, dK = dSᵀ·Q/√d. The probabilities P [N, heads, T, T] are kept from
// forward for backward (memory O(T²) per head, unlike the CPU kernel's blocks). All on the legacy default stream.
#pragma once

#include <cstdint>

namespace mirror::nn::detail::cuda {

struct AttentionDims {
  std::int64_t batch = 0, positions = 0, channels = 0, heads = 1;
  std::int64_t head_size() const { return channels / heads; }
};

// out from qkv; probs [N, heads, T, T] (device) receives P.
void causal_attention_forward(const AttentionDims& s, const float* qkv, float* probs, float* out);
// dqkv [N, T, 3C] (overwritten) from d_out [N, T, C], the forward's qkv and probs; dprobs [N, heads, T, T] is scratch.
void causal_attention_backward(const AttentionDims& s, const float* qkv, const float* probs, const float* d_out,
                               float* dprobs, float* dqkv);

// Incremental decoding (decode_cache.h; the CPU's attention_decode_cpu.h): keys and values [N, capacity, C]
// each. append: the new positions' keys and values (from qkv [N, T, 3C]) into the cache at [offset, offset + T).
// cached forward: out[n, i] = softmax over j <= offset + i of q·k_jᵀ/√d, times v_j (one block per (n, i, head)).
void append_keys_values(const float* qkv, std::int64_t batch, std::int64_t positions, std::int64_t offset,
                        std::int64_t capacity, std::int64_t channels, float* keys, float* values);
void cached_attention_forward(const AttentionDims& s, std::int64_t offset, std::int64_t capacity, const float* qkv,
                              const float* keys, const float* values, float* out);

// The same with bfloat16 operands and float32 accumulation (precision.h; cublasGemmStridedBatchedEx on tensor
// cores): qkv16 is qkv rounded by the caller; P and dS are rounded here into probs16 / dprobs16 ([N, heads, T, T]
// bfloat16 scratch) before the products that take them, d_out into d_out16 ([N, T, C]). Softmax and its backward
// stay float32.
void causal_attention_forward_bf16(const AttentionDims& s, const std::uint16_t* qkv16, float* probs,
                                   std::uint16_t* probs16, float* out);
void causal_attention_backward_bf16(const AttentionDims& s, const std::uint16_t* qkv16, const float* probs,
                                    const std::uint16_t* probs16, const float* d_out, std::uint16_t* d_out16,
                                    float* dprobs, std::uint16_t* dprobs16, float* dqkv);

}  // namespace mirror::nn::detail::cuda
