// bench_gemm.cc — `mirror-gemm-bench`: OpenBLAS's cblas_sgemm against oneDNN's dnnl_sgemm and oneDNN's matmul
// primitive at the Linear layers' matrix products (the MLP's 784→512→256→10, and keras-cnn's 5408→64, cnn-bn's
// 3136→128 and mlp:2048,2048's; forward y = x·Wᵀ, weight gradient dW = dyᵀ·x, input gradient dx = dy·W) for
// batches 64 and 32, single-threaded by default (as a rank runs). The three alternate, round after round, on the
// same buffers; each shape prints the best round of each (GFLOP/s) and the ratios to OpenBLAS and of matmul to
// sgemm. The choice of ops::gemm's CPU library and of Linear's CPU forward (linear_cpu_matmul.h) rests on this
// table (docs/compute.md). A benchmark, not a test.
//   mirror-gemm-bench [--threads 1] [--rounds 7] [--min-ms 20]
#include <CLI/CLI.hpp>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <utility>
#include <iterator>
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

// The same product as a oneDNN matmul primitive over the same row-major buffers (transposes as strides).
class Matmul {
 public:
  explicit Matmul(const Shape& s)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_),
        a_({s.m, s.k}, dnnl::memory::data_type::f32, s.ta ? dnnl::memory::dims{1, s.m} : dnnl::memory::dims{s.k, 1}),
        b_({s.k, s.n}, dnnl::memory::data_type::f32, s.tb ? dnnl::memory::dims{1, s.k} : dnnl::memory::dims{s.n, 1}),
        c_({s.m, s.n}, dnnl::memory::data_type::f32, dnnl::memory::dims{s.n, 1}),
        matmul_(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_, b_, c_), engine_)) {}
  void run(const float* a, const float* b, float* c) {
    matmul_.execute(stream_, {{DNNL_ARG_SRC, dnnl::memory(a_, engine_, const_cast<float*>(a))},
                              {DNNL_ARG_WEIGHTS, dnnl::memory(b_, engine_, const_cast<float*>(b))},
                              {DNNL_ARG_DST, dnnl::memory(c_, engine_, c)}});
    stream_.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::memory::desc a_, b_, c_;
  dnnl::matmul matmul_;
};

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
  std::printf("%-20s %5s %5s %5s %14s %14s %14s %8s %8s\n", "product", "m", "n", "k", "OpenBLAS GF/s",
              "sgemm GF/s", "matmul GF/s", "sgemm/OB", "mm/sgemm");
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int batch : {64, 32}) {
    for (const Shape& s : linear_shapes(batch)) {
      std::vector<float> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n),
          c(static_cast<std::size_t>(s.m) * s.n);
      for (auto& v : a) v = dist(gen);
      for (auto& v : b) v = dist(gen);
      Matmul matmul(s);
      double best_blas = 1e30, best_dnnl = 1e30, best_mm = 1e30;
      for (int r = 0; r < rounds; ++r) {
        best_blas = std::min(best_blas, time_per_call(min_ms / 1e3, [&] { run_openblas(s, a.data(), b.data(), c.data()); }));
        best_dnnl = std::min(best_dnnl, time_per_call(min_ms / 1e3, [&] { run_onednn(s, a.data(), b.data(), c.data()); }));
        best_mm = std::min(best_mm, time_per_call(min_ms / 1e3, [&] { matmul.run(a.data(), b.data(), c.data()); }));
      }
      const double flop = 2.0 * s.m * s.n * s.k;
      std::printf("%-20s %5d %5d %5d %14.1f %14.1f %14.1f %8.2f %8.2f\n", (s.what + " B" + std::to_string(batch)).c_str(),
                  s.m, s.n, s.k, flop / best_blas / 1e9, flop / best_dnnl / 1e9, flop / best_mm / 1e9,
                  best_blas / best_dnnl, best_dnnl / best_mm);
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
