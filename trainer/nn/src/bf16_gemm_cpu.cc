// bf16_gemm_cpu.cc — bf16_gemm_cpu.h: the primitive cache (keyed by everything a matmul primitive is built from;
// guarded by a mutex, though Mirror computes on one thread per process).
#include "bf16_gemm_cpu.h"

#include <map>
#include <mutex>
#include <tuple>

#include "dnnl_cpu.h"

namespace mirror::nn::detail {
namespace cpu {
namespace {

using dnnl::memory;
using Key = std::tuple<bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       float, float>;

struct Product {
  memory::desc a, b, c;
  dnnl::matmul matmul;
};

// op(X) [rows, cols] of a row-major X with leading dimension ld: X itself, or Xᵀ read by columns.
memory::desc operand(ops::Trans t, std::int64_t rows, std::int64_t cols, std::int64_t ld, memory::data_type type) {
  return t == ops::Trans::kNo ? memory::desc({rows, cols}, type, memory::dims{ld, 1})
                              : memory::desc({rows, cols}, type, memory::dims{1, ld});
}

Product build(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
              std::int64_t lda, std::int64_t ldb, float beta, std::int64_t ldc) {
  Product p;
  p.a = operand(ta, m, k, lda, memory::data_type::bf16);
  p.b = operand(tb, k, n, ldb, memory::data_type::bf16);
  p.c = operand(ops::Trans::kNo, m, n, ldc, memory::data_type::f32);
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(beta);
    attr.set_post_ops(sum);
  }
  p.matmul = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a, p.b, p.c), attr, dnnl_cpu::engine()));
  return p;
}

}  // namespace

void gemm_bf16(ops::Trans ta, ops::Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
               const BFloat16* a, std::int64_t lda, const BFloat16* b, std::int64_t ldb, float beta, float* c,
               std::int64_t ldc) {
  static std::mutex mutex;
  static std::map<Key, Product> products;
  dnnl_cpu::run("bfloat16 product", [&] {
    const Key key{ta == ops::Trans::kYes, tb == ops::Trans::kYes, m, n, k, lda, ldb, ldc, alpha, beta};
    const Product* p = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      auto it = products.find(key);
      if (it == products.end()) it = products.emplace(key, build(ta, tb, m, n, k, alpha, lda, ldb, beta, ldc)).first;
      p = &it->second;
    }
    auto* mutable_a = const_cast<BFloat16*>(a);  // oneDNN's handles are non-const; inputs stay read
    auto* mutable_b = const_cast<BFloat16*>(b);
    dnnl_cpu::execute(p->matmul, {{DNNL_ARG_SRC, memory(p->a, dnnl_cpu::engine(), mutable_a)},
                                  {DNNL_ARG_WEIGHTS, memory(p->b, dnnl_cpu::engine(), mutable_b)},
                                  {DNNL_ARG_DST, memory(p->c, dnnl_cpu::engine(), c)}});
  });
}

}  // namespace cpu

}  // namespace mirror::nn::detail
