// mirror/nn/precision.h — the precision the products compute in, process-wide (as the convolution algorithm in
// cpu_kernels.h): float32, or bfloat16 operands with float32 accumulation (Keras' mixed_bfloat16, PyTorch's
// autocast, llm.c's bf16 with a float32 master copy). With bfloat16 the linear layers (the tied head among them),
// attention's products and the convolutions round their operands to bfloat16 and accumulate and write float32;
// everything else (normalisation statistics, softmax, the loss, the optimizer, the parameters) stays float32.
// Layers read the setting at every forward and backward. On the CPU the bfloat16 products are oneDNN's, which
// has kernels for them from avx512_core up (AVX-512-BF16 and AMX natively); below that oneDNN 2.6 has none, and
// bfloat16 is refused there. On CUDA the linear layers' and attention's products are cuBLAS's (bf16_products.h,
// cuda/attention_cuda.h), and the convolutions cuDNN's BFLOAT16 configuration (cuda/conv2d_cuda.cc).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

enum class Precision { kFloat32, kBFloat16 };

// "fp32", "bf16" (the trainer's --precision words).
const char* to_string(Precision precision);
// The same as a table, for command lines (--precision in the trainer, mirror-eval and mirror-generate).
inline const std::vector<std::pair<std::string, Precision>> kPrecisionNames{{"fp32", Precision::kFloat32},
                                                                            {"bf16", Precision::kBFloat16}};

// Sets the process's compute precision for layers on `device`. kBFloat16 on the CPU throws kInvalidArgument with
// cpu_bf16_problem() when the CPU's oneDNN has no bfloat16 product kernels (CUDA: cuBLAS has them on every GPU).
void set_compute_precision(Precision precision, const Device& device = Device{});
Precision compute_precision();
inline bool computes_bf16() { return compute_precision() == Precision::kBFloat16; }

// Empty when oneDNN runs bfloat16 products with its own kernels on this CPU; otherwise why not, naming the
// instruction set oneDNN found (e.g. "oneDNN has no bfloat16 matrix kernels for avx2 (this CPU): --precision bf16
// needs AVX-512 (avx512_core or better)"). Decided once per process, by asking oneDNN which kernel it would run.
std::string cpu_bf16_problem();
// The kernel oneDNN runs bfloat16 products with, in its own words ("brg:avx512_core_bf16",
// "brg:avx512_core_amx"), or "none" where cpu_bf16_problem() is not empty.
std::string cpu_bf16_kernel();

// out[i] = in[i] rounded to bfloat16, to nearest with ties to even; NaN stays NaN (quiet), infinities and signed
// zeros are kept, subnormals are rounded as any other value. in and out must not overlap.
void round_to_bfloat16(const float* in, BFloat16* out, std::int64_t n);

}  // namespace mirror::nn
