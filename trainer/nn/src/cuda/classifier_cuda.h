// classifier_cuda.h (private) — the softmax cross-entropy over wide rows (a language model's vocabulary) as one
// fused kernel, as llm.c's classifier is: one block per row finds the row's max and the sum of exponentials in
// fixed trees, then writes the loss and the gradient in the same launch; the probabilities are never stored.
#pragma once

#include <cstdint>

namespace mirror::nn::detail::cuda {

// Rows at least this wide go to the fused block-per-row kernel; narrower ones (an image model's tens of
// classes) stay one thread per row, where a block would idle most of its threads.
inline constexpr std::int64_t kWideClassifierColumns = 256;

// Per row r: row_loss[r] = log Σ exp(z − max) − (z[label] − max); row_correct[r] = (first arg-max == label);
// dlogits (when not null) = softmax(z) · grad_scale, minus grad_scale at the label. dlogits may alias logits: each
// thread writes only the columns it alone reads, and the label's logit is read before the first write (the
// trainer does this: nn::Model::logits_may_hold_their_gradient). A row holding a NaN has a NaN loss; which column it names as
// its arg-max may differ from the CPU's.
void softmax_cross_entropy_wide(const float* logits, const std::int32_t* labels, std::int64_t rows,
                                std::int64_t cols, float grad_scale, float* dlogits, float* row_loss,
                                std::int32_t* row_correct);

}  // namespace mirror::nn::detail::cuda
