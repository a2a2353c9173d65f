// cpu_loops_isa.h (private) — which build of Mirror's own vectorised CPU loops (BatchNorm2d's, and pooling's over
// blocked layouts) runs: the AVX2 one when the CPU has AVX2 and oneDNN runs at AVX2 or better (cpu_isa_name:
// ONEDNN_MAX_CPU_ISA lowers both at once, which is how the baseline builds are tested on AVX2 machines), else the
// baseline (x86-64: SSE2) one. The AVX2 builds exist on x86-64 with GCC only.
#pragma once

// Whether this compiler builds the AVX2 copies of the loops (x86-64 with GCC: its target pragma).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MIRROR_AVX2_LOOP_BUILDS 1
#else
#define MIRROR_AVX2_LOOP_BUILDS 0
#endif

namespace mirror::nn::detail {

bool cpu_loops_use_avx2();

}  // namespace mirror::nn::detail
