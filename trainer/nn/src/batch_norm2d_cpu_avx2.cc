// batch_norm2d_cpu_avx2.cc — BatchNorm2d's CPU loops (batch_norm2d_cpu.cc) built a second time for AVX2, on
// x86-64 with GCC; batch_norm2d_cpu_select.cc picks them when oneDNN runs AVX2 or better (cpu_kernels.h).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MIRROR_BN_CPU_AVX2 1
#include "batch_norm2d_cpu.cc"
#endif
