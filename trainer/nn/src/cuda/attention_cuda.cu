// attention_cuda.cu — attention_cuda.h: the batched products through cuBLAS (row-major expressed column-major, as
// ops_cuda.cu's gemm; in float32 or with bfloat16 operands), the causal softmax and its backward as one block per
// row.
#include <cmath>
#include <cstdint>

#include "attention_cuda.h"
#include "launch_cuda.h"

namespace mirror::nn::detail::cuda {
namespace {

cublasOperation_t op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

// Row-major C_b[m, n] = alpha · op(A_b)[m, k] · op(B_b)[k, n] + beta · C_b for b < batch, A_b = A + b·stride_a etc.
void gemm_batched(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                  std::int64_t lda, std::int64_t stride_a, const float* b, std::int64_t ldb, std::int64_t stride_b,
                  float beta, float* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) {
  MIRROR_CHECK_CUBLAS(cublasSgemmStridedBatched(
      cublas_handle(), op(tb), op(ta), static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
      static_cast<int>(ldb), stride_b, a, static_cast<int>(lda), stride_a, &beta, c, static_cast<int>(ldc), stride_c,
      static_cast<int>(batch)));
}

// Row i of each T×T matrix (blockIdx.x = matrix · T + i): P = softmax over j <= i of the scores, 0 above.
__global__ void causal_softmax_kernel(float* scores, std::int64_t positions) {
  __shared__ float shared[kThreads];
  const std::int64_t row = blockIdx.x, i = row % positions;
  float* s = scores + row * positions;
  float m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j <= i; j += blockDim.x) m = fmaxf(m, s[j]);
  m = block_reduce(m, shared, Max{});
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= i; j += blockDim.x) sum += expf(s[j] - m);
  sum = block_reduce(sum, shared, Sum{});
  const float inv = 1.0f / sum;
  for (std::int64_t j = threadIdx.x; j < positions; j += blockDim.x) s[j] = j <= i ? expf(s[j] - m) * inv : 0.0f;
}

// dS = P ∘ (dP − Σ_j P ∘ dP), in place of dP.
__global__ void softmax_backward_kernel(const float* probs, float* dprobs, std::int64_t positions) {
  __shared__ float shared[kThreads];
  const std::int64_t row = blockIdx.x;
  const float* p = probs + row * positions;
  float* dp = dprobs + row * positions;
  float dot = 0.0f;
  for (std::int64_t j = threadIdx.x; j < positions; j += blockDim.x) dot += p[j] * dp[j];
  dot = block_reduce(dot, shared, Sum{});
  for (std::int64_t j = threadIdx.x; j < positions; j += blockDim.x) dp[j] = p[j] * (dp[j] - dot);
}

// The same with bfloat16 A and B (float32 C and accumulation).
void gemm_batched_bf16(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                       const std::uint16_t* a, std::int64_t lda, std::int64_t stride_a, const std::uint16_t* b,
                       std::int64_t ldb, std::int64_t stride_b, float beta, float* c, std::int64_t ldc,
                       std::int64_t stride_c, std::int64_t batch) {
  MIRROR_CHECK_CUBLAS(cublasGemmStridedBatchedEx(
      cublas_handle(), op(tb), op(ta), static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
      CUDA_R_16BF, static_cast<int>(ldb), stride_b, a, CUDA_R_16BF, static_cast<int>(lda), stride_a, &beta, c,
      CUDA_R_32F, static_cast<int>(ldc), stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// One block per (sample n, new position i, head h): scores over the cached rows j <= offset + i into shared memory
// (dynamic, capacity floats), their softmax, then each of the head's d outputs as a sum over j.
__global__ void cached_attention_kernel(const float* qkv, const float* keys, const float* values, std::int64_t positions,
                                        std::int64_t offset, std::int64_t capacity, std::int64_t channels,
                                        std::int64_t heads, float scale, float* out) {
  extern __shared__ float scores[];
  __shared__ float shared[kThreads];
  const std::int64_t h = blockIdx.x % heads, i = (blockIdx.x / heads) % positions, n = blockIdx.x / (heads * positions);
  const std::int64_t d = channels / heads, length = offset + i + 1;
  const float* q = qkv + (n * positions + i) * 3 * channels + h * d;
  const float* k = keys + n * capacity * channels + h * d;
  const float* v = values + n * capacity * channels + h * d;
  float m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x) {
    float dot = 0.0f;
    for (std::int64_t c = 0; c < d; ++c) dot += q[c] * k[j * channels + c];
    scores[j] = dot * scale;
    m = fmaxf(m, scores[j]);
  }
  m = block_reduce(m, shared, Max{});
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x) {
    scores[j] = expf(scores[j] - m);
    sum += scores[j];
  }
  sum = block_reduce(sum, shared, Sum{});
  const float inv = 1.0f / sum;
  for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    float acc = 0.0f;
    for (std::int64_t j = 0; j < length; ++j) acc += scores[j] * v[j * channels + c];
    out[(n * positions + i) * channels + h * d + c] = acc * inv;
  }
}

}  // namespace

void append_keys_values(const float* qkv, std::int64_t batch, std::int64_t positions, std::int64_t offset,
                        std::int64_t capacity, std::int64_t channels, float* keys, float* values) {
  const std::size_t row = static_cast<std::size_t>(channels) * sizeof(float);
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* src = qkv + n * positions * 3 * channels;
    float* k = keys + (n * capacity + offset) * channels;
    float* v = values + (n * capacity + offset) * channels;
    MIRROR_CHECK_CUDA(cudaMemcpy2D(k, row, src + channels, 3 * row, row, static_cast<std::size_t>(positions),
                                   cudaMemcpyDeviceToDevice));
    MIRROR_CHECK_CUDA(cudaMemcpy2D(v, row, src + 2 * channels, 3 * row, row, static_cast<std::size_t>(positions),
                                   cudaMemcpyDeviceToDevice));
  }
}

void cached_attention_forward(const AttentionDims& s, std::int64_t offset, std::int64_t capacity, const float* qkv,
                              const float* keys, const float* values, float* out) {
  if (s.batch == 0 || s.positions == 0) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size()));
  cached_attention_kernel<<<static_cast<unsigned>(s.batch * s.positions * s.heads), kThreads,
                            static_cast<std::size_t>(capacity) * sizeof(float)>>>(
      qkv, keys, values, s.positions, offset, capacity, s.channels, s.heads, scale, out);
  check_launch();
}

// half_cast_cuda.cu's rounding kernel (to nearest even).
void narrow_to_16bit(const float* in, std::uint16_t* out, std::size_t n, bool half, float scale);

void causal_attention_forward(const AttentionDims& s, const float* qkv, float* probs, float* out) {
  if (s.batch == 0 || s.positions == 0) return;
  const std::int64_t T = s.positions, C = s.channels, H = s.heads, d = s.head_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::int64_t n = 0; n < s.batch; ++n) {
    const float* q = qkv + n * T * 3 * C;
    float* p = probs + n * H * T * T;
    gemm_batched(false, true, T, T, d, scale, q, 3 * C, d, q + C, 3 * C, d, 0.0f, p, T, T * T, H);  // S = Q·Kᵀ/√d
    causal_softmax_kernel<<<static_cast<unsigned>(H * T), kThreads>>>(p, T);
    check_launch();
    gemm_batched(false, false, T, d, T, 1.0f, p, T, T * T, q + 2 * C, 3 * C, d, 0.0f, out + n * T * C, C, d, H);
  }
}

void causal_attention_backward(const AttentionDims& s, const float* qkv, const float* probs, const float* d_out,
                               float* dprobs, float* dqkv) {
  if (s.batch == 0 || s.positions == 0) return;
  const std::int64_t T = s.positions, C = s.channels, H = s.heads, d = s.head_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::int64_t n = 0; n < s.batch; ++n) {
    const float* q = qkv + n * T * 3 * C;
    const float* p = probs + n * H * T * T;
    const float* d_o = d_out + n * T * C;
    float* dp = dprobs + n * H * T * T;
    float* dq = dqkv + n * T * 3 * C;
    gemm_batched(false, true, T, T, d, 1.0f, d_o, C, d, q + 2 * C, 3 * C, d, 0.0f, dp, T, T * T, H);  // dP = dO·Vᵀ
    gemm_batched(true, false, T, d, T, 1.0f, p, T, T * T, d_o, C, d, 0.0f, dq + 2 * C, 3 * C, d, H);  // dV = Pᵀ·dO
    softmax_backward_kernel<<<static_cast<unsigned>(H * T), kThreads>>>(p, dp, T);
    check_launch();
    gemm_batched(false, false, T, d, T, scale, dp, T, T * T, q + C, 3 * C, d, 0.0f, dq, 3 * C, d, H);  // dQ = dS·K/√d
    gemm_batched(true, false, T, d, T, scale, dp, T, T * T, q, 3 * C, d, 0.0f, dq + C, 3 * C, d, H);  // dK = dSᵀ·Q/√d
  }
}

void causal_attention_forward_bf16(const AttentionDims& s, const std::uint16_t* qkv16, float* probs,
                                   std::uint16_t* probs16, float* out) {
  if (s.batch == 0 || s.positions == 0) return;
  const std::int64_t T = s.positions, C = s.channels, H = s.heads, d = s.head_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::int64_t n = 0; n < s.batch; ++n) {
    const std::uint16_t* q = qkv16 + n * T * 3 * C;
    float* p = probs + n * H * T * T;
    std::uint16_t* p16 = probs16 + n * H * T * T;
    gemm_batched_bf16(false, true, T, T, d, scale, q, 3 * C, d, q + C, 3 * C, d, 0.0f, p, T, T * T, H);
    causal_softmax_kernel<<<static_cast<unsigned>(H * T), kThreads>>>(p, T);
    check_launch();
    narrow_to_16bit(p, p16, static_cast<std::size_t>(H * T * T), false, 1.0f);
    gemm_batched_bf16(false, false, T, d, T, 1.0f, p16, T, T * T, q + 2 * C, 3 * C, d, 0.0f, out + n * T * C, C, d, H);
  }
}

void causal_attention_backward_bf16(const AttentionDims& s, const std::uint16_t* qkv16, const float* probs,
                                    const std::uint16_t* probs16, const float* d_out, std::uint16_t* d_out16,
                                    float* dprobs, std::uint16_t* dprobs16, float* dqkv) {
  if (s.batch == 0 || s.positions == 0) return;
  const std::int64_t T = s.positions, C = s.channels, H = s.heads, d = s.head_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  narrow_to_16bit(d_out, d_out16, static_cast<std::size_t>(s.batch * T * C), false, 1.0f);
  for (std::int64_t n = 0; n < s.batch; ++n) {
    const std::uint16_t* q = qkv16 + n * T * 3 * C;
    const float* p = probs + n * H * T * T;
    const std::uint16_t* p16 = probs16 + n * H * T * T;
    const std::uint16_t* d_o = d_out16 + n * T * C;
    float* dp = dprobs + n * H * T * T;
    std::uint16_t* dp16 = dprobs16 + n * H * T * T;
    float* dq = dqkv + n * T * 3 * C;
    gemm_batched_bf16(false, true, T, T, d, 1.0f, d_o, C, d, q + 2 * C, 3 * C, d, 0.0f, dp, T, T * T, H);
    gemm_batched_bf16(true, false, T, d, T, 1.0f, p16, T, T * T, d_o, C, d, 0.0f, dq + 2 * C, 3 * C, d, H);
    softmax_backward_kernel<<<static_cast<unsigned>(H * T), kThreads>>>(p, dp, T);
    check_launch();
    narrow_to_16bit(dp, dp16, static_cast<std::size_t>(H * T * T), false, 1.0f);
    gemm_batched_bf16(false, false, T, d, T, scale, dp16, T, T * T, q + C, 3 * C, d, 0.0f, dq, 3 * C, d, H);
    gemm_batched_bf16(true, false, T, d, T, scale, dp16, T, T * T, q, 3 * C, d, 0.0f, dq + C, 3 * C, d, H);
  }
}

}  // namespace mirror::nn::detail::cuda
