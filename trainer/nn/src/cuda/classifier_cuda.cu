// classifier_cuda.cu — classifier_cuda.h: the fused softmax cross-entropy, one block per row, reductions in
// fixed trees (block_reduce), so a run repeats bit for bit.
#include "classifier_cuda.h"

#include <algorithm>

#include "launch_cuda.h"

namespace mirror::nn::detail::cuda {
namespace {

// A candidate for the row's arg-max; ties go to the lower index, as the CPU's first arg-max.
struct MaxAt {
  float value;
  std::int64_t index;
};

struct FirstMax {
  __device__ MaxAt operator()(MaxAt a, MaxAt b) const {
    return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
  }
};

// One block per row (grid-stride over rows); each thread walks the columns c ≡ threadIdx.x (mod kThreads).
__global__ void softmax_xent_wide_kernel(const float* logits, const std::int32_t* labels, std::int64_t rows,
                                         std::int64_t cols, float grad_scale, float* dlogits, float* row_loss,
                                         std::int32_t* row_correct) {
  __shared__ MaxAt max_tree[kThreads];
  __shared__ float sum_tree[kThreads];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* z = logits + r * cols;
    // Each thread starts from its first column, so a row of -inf still names column 0.
    MaxAt best{threadIdx.x < cols ? z[threadIdx.x] : -INFINITY, threadIdx.x < cols ? threadIdx.x : cols};
    for (std::int64_t c = threadIdx.x + kThreads; c < cols; c += kThreads)
      if (z[c] > best.value) best = MaxAt{z[c], c};
    const MaxAt top = block_reduce(best, max_tree, FirstMax{});
    const std::int32_t label = labels[r];
    const float label_logit = z[label];  // read before the tree's barriers, so dlogits may alias logits
    float partial = 0.0f;
    for (std::int64_t c = threadIdx.x; c < cols; c += kThreads) partial += expf(z[c] - top.value);
    const float sum = block_reduce(partial, sum_tree, Sum{});
    if (threadIdx.x == 0) {
      row_loss[r] = logf(sum) - (label_logit - top.value);
      row_correct[r] = top.index == label ? 1 : 0;
    }
    if (dlogits) {
      float* d = dlogits + r * cols;
      const float inv = grad_scale / sum;
      for (std::int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const float p = expf(z[c] - top.value) * inv;
        d[c] = c == label ? p - grad_scale : p;
      }
    }
    __syncthreads();  // the row's writes end before the next row's reads of the trees
  }
}

}  // namespace

void softmax_cross_entropy_wide(const float* logits, const std::int32_t* labels, std::int64_t rows,
                                std::int64_t cols, float grad_scale, float* dlogits, float* row_loss,
                                std::int32_t* row_correct) {
  const int blocks = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(rows, 1), 65535));
  softmax_xent_wide_kernel<<<blocks, kThreads>>>(logits, labels, rows, cols, grad_scale, dlogits, row_loss,
                                                 row_correct);
  check_launch();
}

}  // namespace mirror::nn::detail::cuda
