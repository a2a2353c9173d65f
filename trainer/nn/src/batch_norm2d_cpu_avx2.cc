// batch_norm2d_cpu_avx2.cc — BatchNorm2d's CPU loops (batch_norm2d_cpu.cc) built a second time for AVX2, on
// x86-64 with GCC; batch_norm2d_cpu_select.cc picks them when oneDNN runs AVX2 or better (cpu_kernels.h).
#include "cpu_loops_isa.h"

#if MIRROR_AVX2_LOOP_BUILDS
#define MIRROR_BN_CPU_AVX2 1
#include "batch_norm2d_cpu.cc"
#endif
