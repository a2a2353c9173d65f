// mirror/nn/cpu_kernels.h — what computes on the CPU, for the banner and the metrics: the compute library
// (oneDNN), its version and threading, and the instruction set its kernels were generated for on this CPU
// (oneDNN picks them at run time from cpuid: AVX2, AVX-512, AMX, ...; ONEDNN_MAX_CPU_ISA may lower it).
#pragma once

#include <string>

namespace mirror::nn {

// oneDNN's effective ISA in its own words: "sse41", "avx", "avx2", "avx2_vnni", "avx512_core",
// "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx", or "unknown(0x..)".
std::string cpu_isa_name();

// "oneDNN 2.6.3 (OpenMP, 1 thread) avx2, BatchNorm and pooling loops avx2, conv direct": Mirror's own BatchNorm2d
// loops and blocked pooling loops are built twice and run as AVX2 code when the CPU has it and oneDNN's ISA is AVX2
// or better, else as the baseline (SSE2) build; then the convolutions' algorithm as it computes: "direct", "winograd (3x3 stride 1)", or
// "direct (no Winograd kernels for avx2)" where Winograd was asked for at an ISA without it.
std::string cpu_kernels_description();

// How CPU convolutions compute, among oneDNN's algorithms. kDirect: its direct (and im2col + GEMM) kernels, every
// layer. kWinograd: its Winograd F(4×4, 3×3) kernels (jit_wino_4x3) wherever oneDNN 2.6 has them — 3×3 kernels,
// stride 1, blocked layouts, on avx512_core and better — and the direct ones for every other layer and on every
// other CPU (an AVX2 machine computes as with kDirect). Winograd does about 2.25× fewer multiplications per 3×3
// output and rounds differently (docs/compute.md). Process-wide, as cpu_threads; a layer reads it when it builds
// its primitives (its first forward, or a new input shape). The library's default is kDirect; the trainer's
// --conv-algorithm is winograd unless told.
enum class CpuConvAlgorithm { kDirect, kWinograd };
void set_cpu_conv_algorithm(CpuConvAlgorithm algorithm);
CpuConvAlgorithm cpu_conv_algorithm();
// Whether oneDNN has Winograd kernels at this ISA (avx512_core and better), for the banner and tests.
bool onednn_has_winograd();

}  // namespace mirror::nn
