// gelu_cpu_avx2.cc — GELU's loops (gelu_cpu.cc) built a second time for AVX2, on x86-64 with GCC.
#include "cpu_loops_isa.h"

#if MIRROR_AVX2_LOOP_BUILDS
#define MIRROR_GELU_CPU_AVX2 1
#include "gelu_cpu.cc"
#endif
