// bench_gemm.cc — `mirror-gemm-bench`: OpenBLAS's cblas_sgemm against oneDNN's dnnl_sgemm and oneDNN's matmul
// primitive at the Linear layers' matrix products (the MLP's 784→512→256→10, and keras-cnn's 5408→64, cnn-bn's
// 3136→128 and mlp:2048,2048's; forward y = x·Wᵀ, weight gradient dW = dyᵀ·x, input gradient dx = dy·W) for
// batches 64 and 32, single-threaded by default (as a rank runs). The three alternate, round after round, on the
// same buffers; each shape prints the best round of each (GFLOP/s) and the ratios to OpenBLAS and of matmul to
// sgemm. The choice of ops::gemm's CPU library and of Linear's CPU forward (linear_cpu_matmul.h) rests on this
// table (docs/compute.md). A last column times oneDNN's bf16 matmul (bf16 inputs, float32 accumulation and
// output) where oneDNN has bf16 products on the CPU ("-" elsewhere), for mixed precision. A benchmark, not a test.
//   mirror-gemm-bench [--threads 1] [--rounds 7] [--min-ms 20]
#include <CLI/CLI.hpp>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <utility>
#include <iterator>
#include <memory>
#include <vector>

#include "mirror/error.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/device.h"

extern "C" char* openblas_get_corename(void);

namespace {
using Clock = std::chrono::steady_clock;

struct Shape {
  std::string what;
  bool ta, tb;
  int m, n, k;
};

std::vector<Shape> linear_shapes(int batch) {
  const std::pair<int, int> layers[] = {{784, 512},  {512, 256},  {256, 10},   {5408, 64},
                                        {3136, 128}, {784, 2048}, {2048, 2048}};
  std::vector<Shape> out;
  for (std::size_t l = 0; l < std::size(layers); ++l) {
    const auto [in, o] = layers[l];
    const std::string name = std::to_string(in) + "->" + std::to_string(o);
    out.push_back({"fwd  " + name, false, true, batch, o, in});   // y[B,o] = x[B,in] · W[o,in]ᵀ
    out.push_back({"dW   " + name, true, false, o, in, batch});   // dW[o,in] = dy[B,o]ᵀ · x[B,in]
    if (l != 0 && l != 5) out.push_back({"dx   " + name, false, false, batch, in, o});  // dx[B,in] = dy[B,o] · W[o,in]
  }
  return out;
}

void run_openblas(const Shape& s, const float* a, const float* b, float* c) {
  const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
              a, lda, b, ldb, 0.0f, c, s.n);
}

void run_onednn(const Shape& s, const float* a, const float* b, float* c) {
  const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  const dnnl_status_t st = dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f,
                                      c, s.n);
  MIRROR_CHECK(st == dnnl_success, kInternal, "dnnl_sgemm failed with status " << static_cast<int>(st));
}

// The same product as a oneDNN matmul primitive over the same row-major buffers (transposes as strides), with
// inputs of type `in` (f32, or bf16 with float32 accumulation and output: what mixed precision would run).
class Matmul {
 public:
  explicit Matmul(const Shape& s, dnnl::memory::data_type in = dnnl::memory::data_type::f32)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_),
        a_({s.m, s.k}, in, s.ta ? dnnl::memory::dims{1, s.m} : dnnl::memory::dims{s.k, 1}),
        b_({s.k, s.n}, in, s.tb ? dnnl::memory::dims{1, s.k} : dnnl::memory::dims{s.n, 1}),
        c_({s.m, s.n}, dnnl::memory::data_type::f32, dnnl::memory::dims{s.n, 1}),
        matmul_(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_, b_, c_), engine_)) {}
  void run(const void* a, const void* b, float* c) {
    matmul_.execute(stream_, {{DNNL_ARG_SRC, dnnl::memory(a_, engine_, const_cast<void*>(a))},
                              {DNNL_ARG_WEIGHTS, dnnl::memory(b_, engine_, const_cast<void*>(b))},
                              {DNNL_ARG_DST, dnnl::memory(c_, engine_, c)}});
    stream_.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::memory::desc a_, b_, c_;
  dnnl::matmul matmul_;
};

// bfloat16 of each value, rounded to nearest even (the inputs a bf16 matmul would get).
std::vector<std::uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<std::uint16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(x[i]);
    out[i] = static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
  }
  return out;
}

// The bf16 matmul of `s`, or null where oneDNN has no bf16 products on this CPU (oneDNN 2.6: below AVX-512).
std::unique_ptr<Matmul> bf16_matmul(const Shape& s) {
  try {
    return std::make_unique<Matmul>(s, dnnl::memory::data_type::bf16);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// Seconds per call: repeats until min_s has passed, returns the mean over those calls.
template <typename Fn>
double time_per_call(double min_s, Fn&& fn) {
  fn();  // warm the caches and any lazily generated kernel
  int calls = 0;
  const auto t0 = Clock::now();
  double dt = 0;
  do {
    fn();
    ++calls;
    dt = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (dt < min_s);
  return dt / calls;
}

int run(int threads, int rounds, double min_ms) {
  mirror::nn::set_cpu_threads(threads);
  std::printf("# mirror-gemm-bench: %d thread(s), %d alternated rounds, >= %.0f ms per library and round\n", threads,
              rounds, min_ms);
  std::printf("# OpenBLAS core: %s | %s\n", openblas_get_corename(), mirror::nn::cpu_kernels_description().c_str());
  std::printf("%-20s %5s %5s %5s %14s %14s %14s %8s %8s %14s\n", "product", "m", "n", "k", "OpenBLAS GF/s",
              "sgemm GF/s", "matmul GF/s", "sgemm/OB", "mm/sgemm", "bf16 mm GF/s");
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int batch : {64, 32}) {
    for (const Shape& s : linear_shapes(batch)) {
      std::vector<float> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n),
          c(static_cast<std::size_t>(s.m) * s.n);
      for (auto& v : a) v = dist(gen);
      for (auto& v : b) v = dist(gen);
      Matmul matmul(s);
      const std::unique_ptr<Matmul> bf16 = bf16_matmul(s);
      const std::vector<std::uint16_t> a16 = to_bf16(a), b16 = to_bf16(b);
      double best_blas = 1e30, best_dnnl = 1e30, best_mm = 1e30, best_bf16 = 1e30;
      for (int r = 0; r < rounds; ++r) {
        best_blas = std::min(best_blas, time_per_call(min_ms / 1e3, [&] { run_openblas(s, a.data(), b.data(), c.data()); }));
        best_dnnl = std::min(best_dnnl, time_per_call(min_ms / 1e3, [&] { run_onednn(s, a.data(), b.data(), c.data()); }));
        best_mm = std::min(best_mm, time_per_call(min_ms / 1e3, [&] { matmul.run(a.data(), b.data(), c.data()); }));
        if (bf16)
          best_bf16 = std::min(best_bf16, time_per_call(min_ms / 1e3, [&] { bf16->run(a16.data(), b16.data(), c.data()); }));
      }
      const double flop = 2.0 * s.m * s.n * s.k;
      char bf16_text[32] = "             -";
      if (bf16) std::snprintf(bf16_text, sizeof(bf16_text), "%14.1f", flop / best_bf16 / 1e9);
      std::printf("%-20s %5d %5d %5d %14.1f %14.1f %14.1f %8.2f %8.2f %s\n", (s.what + " B" + std::to_string(batch)).c_str(),
                  s.m, s.n, s.k, flop / best_blas / 1e9, flop / best_dnnl / 1e9, flop / best_mm / 1e9,
                  best_blas / best_dnnl, best_dnnl / best_mm, bf16_text);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OpenBLAS cblas_sgemm against oneDNN dnnl_sgemm and oneDNN matmul at the Linear layers' shapes"};
  int threads = 1, rounds = 7;
  double min_ms = 20;
  app.add_option("--threads", threads, "CPU threads for both libraries")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "alternated rounds per shape (the best round counts)")->check(CLI::PositiveNumber);
  app.add_option("--min-ms", min_ms, "milliseconds per library and round")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(threads, rounds, min_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
