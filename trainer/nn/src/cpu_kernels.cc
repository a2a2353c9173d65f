// cpu_kernels.cc — mirror/nn/cpu_kernels.h from oneDNN's version record and dnnl::get_effective_cpu_isa(), and
// the process-wide convolution algorithm setting.
#include "mirror/nn/cpu_kernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <sstream>

#include "cpu_loops_isa.h"
#include "linear_cpu_matmul.h"
#include "mirror/nn/device.h"

namespace mirror::nn {

std::string cpu_isa_name() {
  using dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::sse41: return "sse41";
    case cpu_isa::avx: return "avx";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx2_vnni: return "avx2_vnni";
    case cpu_isa::avx512_mic: return "avx512_mic";
    case cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case cpu_isa::avx512_core: return "avx512_core";
    case cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: break;
  }
  std::ostringstream s;
  s << "unknown(0x" << std::hex << static_cast<int>(dnnl::get_effective_cpu_isa()) << ")";
  return s.str();
}

std::string cpu_kernels_description() {
  const dnnl_version_t* v = dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                                                                                                          : "sequential";
  std::ostringstream s;
  const int threads = cpu_threads();
  s << "oneDNN " << v->major << "." << v->minor << "." << v->patch << " (" << runtime << ", " << threads
    << (threads == 1 ? " thread) " : " threads) ") << cpu_isa_name() << ", BatchNorm and pooling loops "
    << (detail::cpu_loops_use_avx2() ? "avx2" : "baseline") << ", conv ";
  if (cpu_conv_algorithm() == CpuConvAlgorithm::kDirect)
    s << "direct";
  else if (onednn_has_winograd())
    s << "winograd (3x3 stride 1)";
  else
    s << "direct (no Winograd kernels for " << cpu_isa_name() << ")";
  s << ", linear forward " << (detail::cpu_linear_forward_uses_matmul() ? "matmul" : "sgemm");
  return s.str();
}

namespace {
std::atomic<CpuConvAlgorithm> conv_algorithm{CpuConvAlgorithm::kDirect};
}  // namespace

void set_cpu_conv_algorithm(CpuConvAlgorithm algorithm) { conv_algorithm.store(algorithm); }

CpuConvAlgorithm cpu_conv_algorithm() { return conv_algorithm.load(); }

bool onednn_has_winograd() { return cpu_isa_name().rfind("avx512_core", 0) == 0; }

}  // namespace mirror::nn
