// pool2d_cpu_max2x2_avx2.cc — the one-pass 2×2 max pooling (pool2d_cpu_max2x2.cc) built a second time for AVX2, on
// x86-64 with GCC; make_pool2d_cpu (pool2d_cpu.cc) picks it where cpu_loops_use_avx2 says so.
#include "cpu_loops_isa.h"

#if MIRROR_AVX2_LOOP_BUILDS
#define MIRROR_POOL_CPU_AVX2 1
#include "pool2d_cpu_max2x2.cc"
#endif
