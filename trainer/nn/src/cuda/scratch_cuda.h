// scratch_cuda.h (private) — device memory for kernels' temporaries (partial sums), one grow-only buffer per use,
// kept for the process's life so that a step allocates nothing. Every user runs on the legacy default stream, so
// a later use of a buffer is ordered after the kernels of an earlier one; one process drives one GPU (the
// design), and a buffer made on one device is not used from another.
#pragma once

#include <cstddef>

namespace mirror::nn::detail::cuda {

enum class Scratch { kGradNorm, kLayerNormPartials, kCount };

// At least `bytes` of device memory for `use` (contents undefined; valid until the next call for the same use).
void* scratch(Scratch use, std::size_t bytes);

}  // namespace mirror::nn::detail::cuda
