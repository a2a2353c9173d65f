// mirror/nn/cpu_kernels.h — what computes on the CPU, for the banner and the metrics: the compute library
// (oneDNN), its version and threading, and the instruction set its kernels were generated for on this CPU
// (oneDNN picks them at run time from cpuid: AVX2, AVX-512, AMX, ...; ONEDNN_MAX_CPU_ISA may lower it).
#pragma once

#include <string>

namespace mirror::nn {

// oneDNN's effective ISA in its own words: "sse41", "avx", "avx2", "avx2_vnni", "avx512_core",
// "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx", or "unknown(0x..)".
std::string cpu_isa_name();

// "oneDNN 2.6.3 (OpenMP, 1 thread) avx2, BatchNorm loops avx2": Mirror's own BatchNorm2d loops are built twice and
// run as AVX2 code when the CPU has it and oneDNN's ISA is AVX2 or better, else as the baseline (SSE2) build.
std::string cpu_kernels_description();

}  // namespace mirror::nn
