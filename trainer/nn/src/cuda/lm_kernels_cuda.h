// lm_kernels_cuda.h (private) — the CUDA kernels of the language-model layers (lm_kernels.cu), as plain launchers
// over device pointers on the legacy default stream: GELU (tanh approximation), LayerNorm over the last axis,
// token and position embeddings. Every reduction has a fixed order (one block per row with a fixed tree, or one
// thread per output summing in a given order), never atomics, so a run repeats bit for bit.
#pragma once

#include <cstdint>

namespace mirror::nn::detail::cuda {

// y = 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))); dx = dy · GELU'(x).
void gelu_forward(const float* x, float* y, std::int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n);

// Per row of `channels` values: mean and 1/√(var + eps) (statistics in double, as the CPU layer), x̂ and
// y = x̂ γ + β. mean, rstd: device floats [rows].
void layernorm_forward(const float* x, const float* gamma, const float* beta, std::int64_t rows,
                       std::int64_t channels, float eps, float* xhat, float* y, float* mean, float* rstd);
// dβ (+)= Σ_rows dy, dγ (+)= Σ_rows dy·x̂ (in double: fixed chunks of rows in order, then the chunks in order);
// accumulate: add to what the gradients hold.
void layernorm_parameter_grads(const float* dy, const float* xhat, std::int64_t rows, std::int64_t channels,
                               bool accumulate, float* dgamma, float* dbeta);
// dx = rstd · (dy·γ − mean(dy·γ) − x̂ · mean(dy·γ·x̂)) per row.
void layernorm_input_grad(const float* dy, const float* xhat, const float* gamma, const float* rstd, std::int64_t rows,
                          std::int64_t channels, float* dx);

// y[p, :] = table[ids[p], :] for p < positions.
void embedding_forward(const std::int32_t* ids, const float* table, std::int64_t positions, std::int64_t channels,
                       float* y);
// The table's gradient without atomics: `order` holds the positions sorted by token (stable, so in position order
// within a token), `starts` [tokens + 1] where each listed token's run begins in `order`, `tokens` the distinct
// tokens (all device memory, made on the host by the caller); one thread per (listed token, channel) adds its
// run's dy rows in order to grad[token, :] (overwrite: first sets it to 0; rows of unlisted tokens are untouched).
void embedding_backward(const float* dy, const std::int32_t* order, const std::int32_t* starts,
                        const std::int32_t* tokens, std::int64_t distinct, std::int64_t channels, bool accumulate,
                        float* grad);

// y[n, t, :] = x[n, t, :] + table[t, :] (positions t < T).
void position_embedding_forward(const float* x, const float* table, std::int64_t batch, std::int64_t positions,
                                std::int64_t channels, float* y);
// grad[t, :] (+)= Σ_n dy[n, t, :] (samples in order).
void position_embedding_backward(const float* dy, std::int64_t batch, std::int64_t positions, std::int64_t channels,
                                 bool accumulate, float* grad);

}  // namespace mirror::nn::detail::cuda
