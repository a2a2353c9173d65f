// linear_cpu_matmul.cc — linear_cpu_matmul.h: one oneDNN matmul primitive over Mirror's buffers (no copies),
// rebuilt only when the shape changes (a last partial batch, evaluation's batch).
#include "linear_cpu_matmul.h"

#include <string>

#include "dnnl_cpu.h"
#include "mirror/nn/cpu_kernels.h"

namespace mirror::nn::detail {

bool cpu_linear_forward_uses_matmul() {
  static const bool matmul = cpu_isa_name().rfind("avx512", 0) == 0;
  return matmul;
}

struct CpuLinearForward::Primitive {
  std::int64_t m = 0, n = 0, k = 0;
  dnnl::memory::desc x_md, w_md, y_md;
  dnnl::matmul matmul;
};

CpuLinearForward::CpuLinearForward() = default;
CpuLinearForward::~CpuLinearForward() = default;

void CpuLinearForward::run(const char* layer, std::int64_t m, std::int64_t n, std::int64_t k, const float* x,
                           const float* w, float* y) {
  using dnnl::memory;
  dnnl_cpu::run(layer, [&] {
    if (!primitive_ || primitive_->m != m || primitive_->n != n || primitive_->k != k) {
      auto p = std::make_unique<Primitive>();
      p->m = m;
      p->n = n;
      p->k = k;
      p->x_md = memory::desc({m, k}, memory::data_type::f32, memory::dims{k, 1});
      p->w_md = memory::desc({k, n}, memory::data_type::f32, memory::dims{1, k});  // Wᵀ: W [n, k] read by columns
      p->y_md = memory::desc({m, n}, memory::data_type::f32, memory::dims{n, 1});
      p->matmul = dnnl::matmul(
          dnnl::matmul::primitive_desc(dnnl::matmul::desc(p->x_md, p->w_md, p->y_md), dnnl_cpu::engine()));
      primitive_ = std::move(p);
    }
    const Primitive& p = *primitive_;
    dnnl_cpu::execute(p.matmul, {{DNNL_ARG_SRC, dnnl_cpu::wrap(p.x_md, x)},
                                 {DNNL_ARG_WEIGHTS, dnnl_cpu::wrap(p.w_md, w)},
                                 {DNNL_ARG_DST, dnnl_cpu::wrap(p.y_md, y)}});
  });
}

}  // namespace mirror::nn::detail
