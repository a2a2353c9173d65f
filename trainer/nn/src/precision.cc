// precision.cc — mirror/nn/precision.h: the process-wide setting, the bfloat16 rounding, and whether this CPU's
// oneDNN has bfloat16 product kernels (asked once, by building a bfloat16 matmul and reading the kernel it chose).
#include "mirror/nn/precision.h"

#include <atomic>
#include <bit>
#include <cstring>

#include "dnnl_cpu.h"
#include "mirror/error.h"
#include "mirror/nn/cpu_kernels.h"

namespace mirror::nn {
namespace {

namespace dnnl_cpu = detail::dnnl_cpu;

std::atomic<Precision> current_precision{Precision::kFloat32};

// The implementation oneDNN picks for a bfloat16 product of a linear layer's shape; "" where it has none.
std::string probe_bf16_kernel() {
  using dnnl::memory;
  std::string name;
  dnnl_cpu::run("bfloat16 probe", [&] {
    const memory::dim m = 64, n = 64, k = 64;
    const memory::desc a({m, k}, memory::data_type::bf16, memory::dims{k, 1});
    const memory::desc b({k, n}, memory::data_type::bf16, memory::dims{1, k});
    const memory::desc c({m, n}, memory::data_type::f32, memory::dims{n, 1});
    try {
      name = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), dnnl_cpu::engine()).impl_info_str();
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;
    }
  });
  return name;
}

const std::string& bf16_kernel() {
  static const std::string kernel = probe_bf16_kernel();
  return kernel;
}

}  // namespace

const char* to_string(Precision precision) { return precision == Precision::kBFloat16 ? "bf16" : "fp32"; }

std::string cpu_bf16_problem() {
  const std::string& kernel = bf16_kernel();
  if (!kernel.empty() && kernel.rfind("ref", 0) != 0) return {};
  return "oneDNN " + std::string("has no bfloat16 matrix kernels for ") + cpu_isa_name() +
         " (this CPU, as oneDNN sees it; ONEDNN_MAX_CPU_ISA may lower it): bfloat16 products need AVX-512 "
         "(avx512_core or better; natively avx512_core_bf16 or avx512_core_amx)";
}

std::string cpu_bf16_kernel() { return cpu_bf16_problem().empty() ? bf16_kernel() : "none"; }

void set_compute_precision(Precision precision, const Device& device) {
  if (precision == Precision::kBFloat16 && device.is_cpu()) {
    const std::string problem = cpu_bf16_problem();
    MIRROR_CHECK(problem.empty(), kInvalidArgument, "bfloat16 compute is not available: " << problem);
  }
  current_precision.store(precision);
}

Precision compute_precision() { return current_precision.load(std::memory_order_relaxed); }

namespace {

// Integer operations only, so every build below gives the same bits.
inline void round_loop(const float* __restrict in, BFloat16* __restrict out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;  // to nearest, ties to even
    out[i].bits = static_cast<std::uint16_t>(nan ? (bits >> 16) | 0x40u : rounded);
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The rounding runs where bfloat16 compute does, on AVX-512 CPUs: a build for them, picked from cpuid.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void round_avx512(const float* in, BFloat16* out, std::int64_t n) {
  round_loop(in, out, n);
}
bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}
#endif

}  // namespace

void round_to_bfloat16(const float* in, BFloat16* out, std::int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (cpu_has_avx512()) return round_avx512(in, out, n);
#endif
  round_loop(in, out, n);
}

}  // namespace mirror::nn
