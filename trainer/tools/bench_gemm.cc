// bench_gemm.cc — `mirror-gemm-bench`: OpenBLAS's cblas_sgemm against oneDNN's dnnl_sgemm at the MLP's matrix
// products (784→512→256→10, forward y = x·Wᵀ, weight gradient dW = dyᵀ·x, input gradient dx = dy·W) for
// batches 64 and 32, single-threaded by default (as a rank runs). The two libraries alternate, round after
// round, on the same buffers; each shape prints the best round of each (GFLOP/s) and oneDNN / OpenBLAS. The
// choice of ops::gemm's CPU library rests on this table (docs/compute.md). A benchmark, not a test.
//   mirror-gemm-bench [--threads 1] [--rounds 7] [--min-ms 20]
#include <CLI/CLI.hpp>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
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

std::vector<Shape> mlp_shapes(int batch) {
  const int sizes[] = {784, 512, 256, 10};
  std::vector<Shape> out;
  for (int l = 0; l < 3; ++l) {
    const int in = sizes[l], o = sizes[l + 1];
    const std::string name = std::to_string(in) + "->" + std::to_string(o);
    out.push_back({"fwd  " + name, false, true, batch, o, in});   // y[B,o] = x[B,in] · W[o,in]ᵀ
    out.push_back({"dW   " + name, true, false, o, in, batch});   // dW[o,in] = dy[B,o]ᵀ · x[B,in]
    if (l > 0) out.push_back({"dx   " + name, false, false, batch, in, o});  // dx[B,in] = dy[B,o] · W[o,in]
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
  std::printf("%-18s %5s %5s %5s %14s %14s %8s\n", "product", "m", "n", "k", "OpenBLAS GF/s", "oneDNN GF/s",
              "ratio");
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int batch : {64, 32}) {
    for (const Shape& s : mlp_shapes(batch)) {
      std::vector<float> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n),
          c(static_cast<std::size_t>(s.m) * s.n);
      for (auto& v : a) v = dist(gen);
      for (auto& v : b) v = dist(gen);
      double best_blas = 1e30, best_dnnl = 1e30;
      for (int r = 0; r < rounds; ++r) {
        best_blas = std::min(best_blas, time_per_call(min_ms / 1e3, [&] { run_openblas(s, a.data(), b.data(), c.data()); }));
        best_dnnl = std::min(best_dnnl, time_per_call(min_ms / 1e3, [&] { run_onednn(s, a.data(), b.data(), c.data()); }));
      }
      const double flop = 2.0 * s.m * s.n * s.k;
      std::printf("%-18s %5d %5d %5d %14.1f %14.1f %8.2f\n", (s.what + " B" + std::to_string(batch)).c_str(), s.m,
                  s.n, s.k, flop / best_blas / 1e9, flop / best_dnnl / 1e9, best_blas / best_dnnl);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OpenBLAS cblas_sgemm against oneDNN dnnl_sgemm at the MLP's shapes"};
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
