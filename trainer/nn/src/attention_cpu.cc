// attention_cpu.cc — attention_cpu.h: per (sample, head), query blocks × key blocks up to the diagonal; scores,
// P·V, Pᵀ·dO, dO·Vᵀ and dS·K products are oneDNN sgemms over strided views of qkv (no copies), or with bfloat16
// operands oneDNN's bfloat16 products over a bfloat16 copy of qkv, with each P and dS block rounded as it is
// used; the exponentials are a polynomial the compiler vectorises. One template serves both: Op is the operand
// type.
#include "attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend.h"
#include "bf16_gemm_cpu.h"
#include "bf16_products.h"
#include "fast_math.h"

namespace mirror::nn::detail {
namespace {

using ops::Trans;
constexpr std::int64_t kB = kAttentionBlock;

// C = alpha·op(A)·op(B) + beta·C over operands of type Op (float: sgemm; BFloat16: bfloat16 products).
void product(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
             std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cpu::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void product(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const BFloat16* a,
             std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cpu::gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// A float32 block as a product operand: itself, or rounded to bfloat16 into `copy`.
const float* operand(const float* block, std::int64_t, float*, BFloat16Copy&) { return block; }
const BFloat16* operand(const float* block, std::int64_t n, const BFloat16*, BFloat16Copy& copy) {
  return copy.round(block, n);
}
template <class Op>
const Op* as_operand(const float* block, std::int64_t n, BFloat16Copy& copy) {
  return operand(block, n, static_cast<Op*>(nullptr), copy);
}

// Views of one (sample, head) in the packed tensors.
template <class Op>
struct HeadView {
  const Op* q;
  const Op* k;
  const Op* v;
  std::int64_t ld;  // 3C
};

template <class Op>
HeadView<Op> head_view(const AttentionShape& s, const Op* qkv, std::int64_t n, std::int64_t h) {
  const Op* base = qkv + n * s.positions * 3 * s.channels + h * s.head_size();
  return {base, base + s.channels, base + 2 * s.channels, 3 * s.channels};
}

// Keys of block [j0, j0 + width) that query i may see: j <= i.
inline std::int64_t visible_keys(std::int64_t i, std::int64_t j0, std::int64_t width) {
  return std::clamp<std::int64_t>(i + 1 - j0, 0, width);
}

struct ForwardScratch {
  std::vector<float> scores, acc, row_max, row_sum;
  BFloat16Copy scores_operand;
  explicit ForwardScratch(std::int64_t d)
      : scores(kB * kB), acc(kB * d), row_max(kB), row_sum(kB) {}
};

// One query block [i0, i0 + mq) of one head: online softmax over the key blocks up to the diagonal.
template <class Op>
void forward_query_block(const AttentionShape& s, const HeadView<Op>& hv, std::int64_t i0, std::int64_t mq, float* out,
                         float* lse, ForwardScratch& w) {
  const std::int64_t d = s.head_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::fill(w.acc.begin(), w.acc.begin() + mq * d, 0.0f);
  std::fill(w.row_max.begin(), w.row_max.end(), -std::numeric_limits<float>::infinity());
  std::fill(w.row_sum.begin(), w.row_sum.end(), 0.0f);
  for (std::int64_t j0 = 0; j0 < i0 + mq; j0 += kB) {
    const std::int64_t mk = std::min(kB, s.positions - j0);
    product(Trans::kNo, Trans::kYes, mq, mk, d, scale, hv.q + i0 * hv.ld, hv.ld, hv.k + j0 * hv.ld, hv.ld, 0.0f,
            w.scores.data(), kB);
    for (std::int64_t r = 0; r < mq; ++r) {
      float* __restrict p = w.scores.data() + r * kB;
      const std::int64_t seen = visible_keys(i0 + r, j0, mk);
      float m = w.row_max[r];
      for (std::int64_t c = 0; c < seen; ++c) m = std::max(m, p[c]);
      const float alpha = seen > 0 && w.row_max[r] > -std::numeric_limits<float>::infinity()
                              ? exp_nonpositive(w.row_max[r] - m) : (seen > 0 ? 0.0f : 1.0f);
      float sum = 0.0f;
      for (std::int64_t c = 0; c < seen; ++c) {
        p[c] = exp_nonpositive(p[c] - m);
        sum += p[c];
      }
      for (std::int64_t c = seen; c < mk; ++c) p[c] = 0.0f;
      if (seen > 0) {
        w.row_max[r] = m;
        w.row_sum[r] = w.row_sum[r] * alpha + sum;
        float* __restrict a = w.acc.data() + r * d;
        for (std::int64_t c = 0; c < d; ++c) a[c] *= alpha;
      }
    }
    product(Trans::kNo, Trans::kNo, mq, d, mk, 1.0f, as_operand<Op>(w.scores.data(), mq * kB, w.scores_operand), kB,
            hv.v + j0 * hv.ld, hv.ld, 1.0f, w.acc.data(), d);
  }
  for (std::int64_t r = 0; r < mq; ++r) {
    const float inv = 1.0f / w.row_sum[r];
    float* __restrict o = out + (i0 + r) * s.channels;
    const float* __restrict a = w.acc.data() + r * d;
    for (std::int64_t c = 0; c < d; ++c) o[c] = a[c] * inv;
    lse[i0 + r] = w.row_max[r] + std::log(w.row_sum[r]);
  }
}

struct BackwardScratch {
  std::vector<float> probs, dprobs, delta;
  BFloat16Copy probs_operand, dprobs_operand;
  explicit BackwardScratch(std::int64_t positions) : probs(kB * kB), dprobs(kB * kB), delta(positions) {}
};

template <class Op>
void attention_forward(const AttentionShape& s, const Op* qkv, float* out, float* lse) {
  const std::int64_t d = s.head_size();
  ForwardScratch w(d);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const HeadView<Op> hv = head_view(s, qkv, n, h);
      float* head_out = out + n * s.positions * s.channels + h * d;
      float* head_lse = lse + (n * s.heads + h) * s.positions;
      for (std::int64_t i0 = 0; i0 < s.positions; i0 += kB)
        forward_query_block(s, hv, i0, std::min(kB, s.positions - i0), head_out, head_lse, w);
    }
}

template <class Op>
void attention_backward(const AttentionShape& s, const Op* qkv, const float* out, const float* lse, const float* d_out,
                        const Op* d_out_operand, float* dqkv) {
  const std::int64_t d = s.head_size(), C = s.channels, T = s.positions;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::memset(dqkv, 0, static_cast<std::size_t>(s.batch * T * 3 * C) * sizeof(float));
  BackwardScratch w(T);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const HeadView<Op> hv = head_view(s, qkv, n, h);
      float* dq = dqkv + n * T * 3 * C + h * d;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* o = out + n * T * C + h * d;
      const float* d_o = d_out + n * T * C + h * d;
      const Op* d_o_operand = d_out_operand + n * T * C + h * d;
      const float* head_lse = lse + (n * s.heads + h) * T;
      for (std::int64_t i = 0; i < T; ++i) {  // delta_i = dO_i · O_i, the softmax's row term
        float sum = 0.0f;
        for (std::int64_t c = 0; c < d; ++c) sum += d_o[i * C + c] * o[i * C + c];
        w.delta[i] = sum;
      }
      for (std::int64_t i0 = 0; i0 < T; i0 += kB) {
        const std::int64_t mq = std::min(kB, T - i0);
        for (std::int64_t j0 = 0; j0 < i0 + mq; j0 += kB) {
          const std::int64_t mk = std::min(kB, T - j0);
          product(Trans::kNo, Trans::kYes, mq, mk, d, scale, hv.q + i0 * hv.ld, hv.ld, hv.k + j0 * hv.ld, hv.ld,
                  0.0f, w.probs.data(), kB);
          product(Trans::kNo, Trans::kYes, mq, mk, d, 1.0f, d_o_operand + i0 * C, C, hv.v + j0 * hv.ld, hv.ld, 0.0f,
                  w.dprobs.data(), kB);
          for (std::int64_t r = 0; r < mq; ++r) {
            float* __restrict p = w.probs.data() + r * kB;
            float* __restrict dp = w.dprobs.data() + r * kB;
            const std::int64_t seen = visible_keys(i0 + r, j0, mk);
            const float row_lse = head_lse[i0 + r], row_delta = w.delta[i0 + r];
            for (std::int64_t c = 0; c < seen; ++c) {
              p[c] = exp_nonpositive(p[c] - row_lse);
              dp[c] = p[c] * (dp[c] - row_delta);  // dS = P ∘ (dP − delta)
            }
            for (std::int64_t c = seen; c < mk; ++c) p[c] = dp[c] = 0.0f;
          }
          const Op* probs = as_operand<Op>(w.probs.data(), mq * kB, w.probs_operand);
          const Op* dprobs = as_operand<Op>(w.dprobs.data(), mq * kB, w.dprobs_operand);
          product(Trans::kYes, Trans::kNo, mk, d, mq, 1.0f, probs, kB, d_o_operand + i0 * C, C, 1.0f, dv + j0 * 3 * C,
                  3 * C);  // dV += Pᵀ·dO
          product(Trans::kNo, Trans::kNo, mq, d, mk, scale, dprobs, kB, hv.k + j0 * hv.ld, hv.ld, 1.0f,
                  dq + i0 * 3 * C, 3 * C);  // dQ += dS·K/√d
          product(Trans::kYes, Trans::kNo, mk, d, mq, scale, dprobs, kB, hv.q + i0 * hv.ld, hv.ld, 1.0f,
                  dk + j0 * 3 * C, 3 * C);  // dK += dSᵀ·Q/√d
        }
      }
    }
}

}  // namespace

void causal_attention_forward(const AttentionShape& s, const float* qkv, float* out, float* lse) {
  attention_forward(s, qkv, out, lse);
}

void causal_attention_backward(const AttentionShape& s, const float* qkv, const float* out, const float* lse,
                               const float* d_out, float* dqkv) {
  attention_backward(s, qkv, out, lse, d_out, d_out, dqkv);
}

void causal_attention_forward_bf16(const AttentionShape& s, const BFloat16* qkv, float* out, float* lse) {
  attention_forward(s, qkv, out, lse);
}

void causal_attention_backward_bf16(const AttentionShape& s, const BFloat16* qkv, const float* out, const float* lse,
                                    const float* d_out, float* dqkv) {
  BFloat16Copy d_out_operand;
  attention_backward(s, qkv, out, lse, d_out, d_out_operand.round(d_out, s.batch * s.positions * s.channels), dqkv);
}

}  // namespace mirror::nn::detail
