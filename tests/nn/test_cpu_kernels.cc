// test_cpu_kernels.cc — the instruction set oneDNN runs its kernels with is the best one this CPU and OS offer,
// as cpuid reports them (GCC's __builtin_cpu_supports, which also checks that the OS saves the AVX/AVX-512
// state): never a silent generic fallback. The expectation ladder follows oneDNN 2.6's order of ISAs
// (AMX > AVX-512 BF16 > VNNI > AVX-512 core > AVX2 VNNI > AVX2 > AVX > SSE4.1).
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "mirror/nn/cpu_kernels.h"

namespace mirror::nn {
namespace {

// Linux grants AMX tile data only on request (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18).
bool os_grants_amx() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
#else
  return false;
#endif
}

std::string expected_isa() {
  __builtin_cpu_init();
  const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool vnni = avx512_core && __builtin_cpu_supports("avx512vnni");
  const bool bf16 = vnni && __builtin_cpu_supports("avx512bf16");
  if (bf16 && __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
      __builtin_cpu_supports("amx-bf16") && os_grants_amx())
    return "avx512_core_amx";
  if (bf16) return "avx512_core_bf16";
  if (vnni) return "avx512_core_vnni";
  if (avx512_core) return "avx512_core";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni")) return "avx2_vnni";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  if (__builtin_cpu_supports("avx")) return "avx";
  if (__builtin_cpu_supports("sse4.1")) return "sse41";
  return "unknown";
}

TEST(CpuKernels, OneDnnUsesTheBestIsaTheCpuReports) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA"))
    GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA/DNNL_MAX_CPU_ISA is set: oneDNN is capped on purpose";
  const std::string want = expected_isa(), got = cpu_isa_name();
  std::cout << "cpuid: " << want << ", oneDNN: " << got << " (" << cpu_kernels_description() << ")\n";
  EXPECT_EQ(got, want);
}

TEST(CpuKernels, DescriptionNamesLibraryVersionThreadsAndIsa) {
  const std::string d = cpu_kernels_description();
  EXPECT_EQ(d.rfind("oneDNN 2.", 0), 0u) << d;
  EXPECT_NE(d.find("thread"), std::string::npos) << d;
  EXPECT_NE(d.find(cpu_isa_name()), std::string::npos) << d;
  // Mirror's BatchNorm2d and blocked pooling loops follow oneDNN's ISA (AVX2 builds from AVX2 on), which the test
  // above checks.
  const std::string isa = cpu_isa_name();
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  const bool avx2 = isa.rfind("avx2", 0) == 0 || isa.rfind("avx512", 0) == 0;
#else
  const bool avx2 = false;  // the AVX2 build exists only on x86-64 with GCC
#endif
  EXPECT_NE(d.find(avx2 ? "BatchNorm and pooling loops avx2" : "BatchNorm and pooling loops baseline"), std::string::npos)
      << d;
  // Then the convolutions' algorithm as it computes: Winograd only where asked for and oneDNN has it (avx512_core
  // and better, so cpuid decides through the test above).
  ASSERT_EQ(cpu_conv_algorithm(), CpuConvAlgorithm::kDirect);
  EXPECT_NE(d.find(", conv direct"), std::string::npos) << d;
  set_cpu_conv_algorithm(CpuConvAlgorithm::kWinograd);
  const std::string w = cpu_kernels_description();
  set_cpu_conv_algorithm(CpuConvAlgorithm::kDirect);
  const bool winograd = isa.rfind("avx512_core", 0) == 0;
  EXPECT_NE(w.find(winograd ? ", conv winograd (3x3 stride 1)" : ", conv direct (no Winograd kernels for " + isa + ")"),
            std::string::npos)
      << w;
  // Linear's forward product: oneDNN's matmul where oneDNN runs AVX-512 (its brgemm kernels), sgemm elsewhere.
  const bool matmul = isa.rfind("avx512", 0) == 0;
  EXPECT_NE(d.find(matmul ? ", linear forward matmul" : ", linear forward sgemm"), std::string::npos) << d;
}

}  // namespace
}  // namespace mirror::nn
