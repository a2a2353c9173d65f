// pool2d_cpu_avx2.cc — Pool2d's NCHW CPU loops (pool2d_cpu.cc) built a second time for AVX2, on x86-64 with
// GCC; pool2d_cpu_select.cc picks them when BatchNorm2d's loops run AVX2 too.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MIRROR_POOL_CPU_AVX2 1
#include "pool2d_cpu.cc"
#endif
