// bench_layers.cc — `mirror-layer-bench`: the measurements behind two choices of the CNN layers, at the
// batch-64 shapes of cnn-bn and resnet20, forward + backward, single-threaded by default:
//   batchnorm  BatchNorm2d's own loops (what the layer runs, synchronised or not) against oneDNN's
//              batch_normalization primitive (forward training with scale and shift, then backward);
//   conv2d     Conv2d with plain NCHW layouts (oneDNN's im2col + GEMM) against blocked layouts (its direct JIT
//              kernels) with the reorders around them — what ConvLayout::kAuto decides between — and blocked
//              with the Winograd algorithm (cpu_kernels.h; what the trainer's --conv-algorithm winograd runs);
//   maxpool    MaxPool2d 2×2 (with the ReLU it absorbs) on a blocked input, its output reordered to NCHW for
//              the next layer (what a model runs), against a bridge around NCHW pooling: the blocked input
//              reordered to NCHW, NCHW pooling, and dx reordered back.
// The two sides alternate round after round; each shape prints the best round of each (milliseconds) and the
// ratio. A benchmark, not a test (docs/compute.md).
//   mirror-layer-bench [--layer all|batchnorm|conv2d|maxpool] [--threads 1] [--rounds 7] [--min-ms 30]
#include <CLI/CLI.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/conv2d.h"
#include "mirror/nn/cpu_kernels.h"
#include "mirror/nn/device.h"
#include "mirror/nn/max_pool2d.h"

namespace {
using namespace mirror::nn;
using Clock = std::chrono::steady_clock;

template <typename Fn>
double ms_per_call(double min_ms, Fn&& fn) {
  fn();
  int calls = 0;
  const auto t0 = Clock::now();
  double dt = 0;
  do {
    fn();
    ++calls;
    dt = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  } while (dt < min_ms);
  return dt / calls;
}

struct OneDnnBn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::batch_normalization_forward fwd;
  dnnl::batch_normalization_backward bwd;
  dnnl::memory src, dst, diff_dst, diff_src, scale, shift, diff_scale, diff_shift, mean, var;

  explicit OneDnnBn(const dnnl::memory::dims& d) {
    using dnnl::memory;
    const memory::desc md(d, memory::data_type::f32, memory::format_tag::nchw);
    const memory::desc cd({d[1]}, memory::data_type::f32, memory::format_tag::x);
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    const auto fpd = dnnl::batch_normalization_forward::primitive_desc(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, md, 1e-5f, flags), engine);
    const auto bpd = dnnl::batch_normalization_backward::primitive_desc(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, md, md, 1e-5f, flags), engine, fpd);
    fwd = dnnl::batch_normalization_forward(fpd);
    bwd = dnnl::batch_normalization_backward(bpd);
    for (memory* m : {&src, &dst, &diff_dst, &diff_src}) *m = memory(md, engine);
    for (memory* m : {&scale, &shift, &diff_scale, &diff_shift, &mean, &var}) *m = memory(cd, engine);
    fill(src, 1);
    fill(diff_dst, 2);
    fill(scale, 3);
    fill(shift, 4);
  }
  static void fill(dnnl::memory& m, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    float* p = static_cast<float*>(m.get_data_handle());
    for (std::size_t i = 0; i < m.get_desc().get_size() / sizeof(float); ++i) p[i] = dist(gen);
  }
  void step() {
    fwd.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift},
                         {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}});
    bwd.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_MEAN, mean},
                         {DNNL_ARG_VARIANCE, var}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift},
                         {DNNL_ARG_DIFF_SRC, diff_src},
                         {DNNL_ARG_DIFF_SCALE, diff_scale}, {DNNL_ARG_DIFF_SHIFT, diff_shift}});
    stream.wait();
  }
};

struct MirrorBn {
  std::int64_t c;
  std::vector<float> gamma, beta, dgamma, dbeta, rm, rv;
  BatchNorm2d layer;
  Tensor x, dy;
  explicit MirrorBn(const Shape& s)
      : c(s[1]), gamma(c, 1.0f), beta(c, 0.0f), dgamma(c), dbeta(c), rm(c, 0.0f), rv(c, 1.0f), layer(c, Device{}),
        x(s, Device{}), dy(s, Device{}) {
    const ParamBinding b[] = {{gamma.data(), dgamma.data()}, {beta.data(), dbeta.data()}};
    layer.bind_parameters(b);
    float* const buffers[] = {rm.data(), rv.data()};
    layer.bind_buffers(buffers);
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> h(x.numel());
    for (auto& v : h) v = dist(gen);
    x.copy_from_host(h);
    dy.copy_from_host(h);
  }
  void step() {
    layer.forward(x);
    layer.backward(dy, GradMode::kOverwrite, true, {});
  }
};

struct ConvBench {
  std::int64_t n, c, h, o, k, pad;
  std::vector<float> w, b, dw, db;
  Conv2d layer;
  Tensor x, dy;
  ConvBench(std::int64_t n_, std::int64_t c_, std::int64_t h_, std::int64_t o_, std::int64_t k_, std::int64_t pad_,
            ConvLayout layout)
      : n(n_), c(c_), h(h_), o(o_), k(k_), pad(pad_), w(o * c * k * k, 0.01f), b(o, 0.0f), dw(w.size()), db(o),
        layer(c, o, k, k, 1, 1, pad, pad, true, Device{}, layout), x({n, c, h, h}, Device{}),
        dy({n, o, h + 2 * pad - k + 1, h + 2 * pad - k + 1}, Device{}) {
    const ParamBinding bindings[] = {{w.data(), dw.data()}, {b.data(), db.data()}};
    layer.bind_parameters(bindings);
    x.copy_from_host(std::vector<float>(x.numel(), 0.5f));
    dy.copy_from_host(std::vector<float>(dy.numel(), 0.25f));
  }
  void step() {
    layer.forward(x);
    layer.backward(dy, GradMode::kOverwrite, true, {});
  }
};

void run_conv(int rounds, double min_ms) {
  std::printf("%-28s %11s %11s %12s %13s %16s\n", "conv2d N×C×H×H -> O, k, pad", "plain ms", "blocked ms",
              "winograd ms", "plain/blocked", "blocked/winograd");
  const std::int64_t shapes[][6] = {{64, 1, 28, 32, 3, 1},  {64, 32, 14, 64, 3, 1}, {64, 16, 28, 16, 3, 1},
                                    {64, 32, 14, 32, 3, 1}, {64, 64, 7, 64, 3, 1},  {64, 16, 28, 32, 1, 0}};
  for (const auto& s : shapes) {
    ConvBench plain(s[0], s[1], s[2], s[3], s[4], s[5], ConvLayout::kPlain);
    ConvBench blocked(s[0], s[1], s[2], s[3], s[4], s[5], ConvLayout::kBlocked);
    // Blocked too, with Winograd asked for while its primitives are built (its first step); where oneDNN has
    // none for the shape or ISA it is the direct blocked layer again (ratio about 1).
    ConvBench winograd(s[0], s[1], s[2], s[3], s[4], s[5], ConvLayout::kBlocked);
    set_cpu_conv_algorithm(CpuConvAlgorithm::kWinograd);
    winograd.step();
    set_cpu_conv_algorithm(CpuConvAlgorithm::kDirect);
    double best_plain = 1e30, best_blocked = 1e30, best_winograd = 1e30;
    for (int r = 0; r < rounds; ++r) {
      best_plain = std::min(best_plain, ms_per_call(min_ms, [&] { plain.step(); }));
      best_blocked = std::min(best_blocked, ms_per_call(min_ms, [&] { blocked.step(); }));
      best_winograd = std::min(best_winograd, ms_per_call(min_ms, [&] { winograd.step(); }));
    }
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lldx%lld -> %lld, %lld, %lld", static_cast<long long>(s[0]),
                  static_cast<long long>(s[1]), static_cast<long long>(s[2]), static_cast<long long>(s[2]),
                  static_cast<long long>(s[3]), static_cast<long long>(s[4]), static_cast<long long>(s[5]));
    std::printf("%-28s %11.3f %11.3f %12.3f %13.2f %16.2f  %s\n", name, best_plain, best_blocked, best_winograd,
                best_plain / best_blocked, best_blocked / best_winograd, winograd.layer.implementation().c_str());
  }
}

// One side of the pooling comparison: x blocked (nChw8c, or nChw16c where oneDNN runs AVX-512), dy NCHW (what
// flatten hands back). bridged: x and dx go through oneDNN reorders around NCHW pooling.
struct PoolBench {
  bool bridged;
  Layout layout;
  MaxPool2d layer{2, 2, 2, 2, 0, 0, Device{}};
  Tensor x, x_plain, dy, dx_blocked;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::reorder to_plain, to_blocked;
  dnnl::memory x_mem, x_plain_mem, dx_mem, dx_blocked_mem;

  PoolBench(const Shape& s, bool bridged_)
      : bridged(bridged_), layout(cpu_isa_name().rfind("avx512", 0) == 0 ? Layout::kNChw16c : Layout::kNChw8c),
        x(s, Device{}), x_plain(s, Device{}), dy({s[0], s[1], s[2] / 2, s[3] / 2}, Device{}), dx_blocked(s, Device{}) {
    layer.absorb_preceding_relu();
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> h(x.numel());
    for (auto& v : h) v = dist(gen);
    x.copy_from_host(h);
    x.set_layout(layout);
    dy.copy_from_host(std::vector<float>(h.begin(), h.begin() + dy.numel()));
    using dnnl::memory;
    const memory::dims d(s.begin(), s.end());
    const auto blocked_tag = layout == Layout::kNChw16c ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
    const memory::desc blocked_md(d, memory::data_type::f32, blocked_tag);
    const memory::desc plain_md(d, memory::data_type::f32, memory::format_tag::nchw);
    x_mem = memory(blocked_md, engine, x.data());
    x_plain_mem = memory(plain_md, engine, x_plain.data());
    dx_blocked_mem = memory(blocked_md, engine, dx_blocked.data());
    to_plain = dnnl::reorder(x_mem, x_plain_mem);
    to_blocked = dnnl::reorder(memory(plain_md, engine), dx_blocked_mem);
  }
  void step() {
    if (!bridged) {
      layer.forward(x);
      layer.backward(dy, GradMode::kOverwrite, true, {});
      return;
    }
    to_plain.execute(stream, x_mem, x_plain_mem);
    stream.wait();
    layer.forward(x_plain);
    const Tensor* dx = layer.backward(dy, GradMode::kOverwrite, true, {});
    dnnl::memory dx_plain(x_plain_mem.get_desc(), engine, const_cast<float*>(dx->data()));
    to_blocked.execute(stream, dx_plain, dx_blocked_mem);
    stream.wait();
  }
};

void run_max_pool(int rounds, double min_ms) {
  std::printf("%-22s %14s %14s %8s\n", "maxpool 2x2 N×C×H×W", "bridged ms", "blocked ms", "ratio");
  const std::vector<Shape> shapes{{64, 64, 14, 14}, {64, 32, 28, 28}, {64, 32, 26, 26}, {64, 16, 32, 32}};
  for (const Shape& s : shapes) {
    PoolBench bridged(s, true), blocked(s, false);
    double best_bridged = 1e30, best_blocked = 1e30;
    for (int r = 0; r < rounds; ++r) {
      best_bridged = std::min(best_bridged, ms_per_call(min_ms, [&] { bridged.step(); }));
      best_blocked = std::min(best_blocked, ms_per_call(min_ms, [&] { blocked.step(); }));
    }
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lldx%lld", static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                  static_cast<long long>(s[2]), static_cast<long long>(s[3]));
    std::printf("%-22s %14.3f %14.3f %8.2f\n", name, best_bridged, best_blocked, best_bridged / best_blocked);
  }
}

void run_batch_norm(int rounds, double min_ms) {
  std::printf("%-22s %14s %14s %8s\n", "batchnorm N×C×H×W", "Mirror ms", "oneDNN ms", "ratio");
  const std::vector<Shape> shapes{{64, 32, 28, 28}, {64, 64, 14, 14}, {64, 16, 28, 28}, {64, 32, 14, 14}, {64, 64, 7, 7}};
  for (const Shape& s : shapes) {
    MirrorBn mine(s);
    OneDnnBn theirs({s[0], s[1], s[2], s[3]});
    double best_mine = 1e30, best_theirs = 1e30;
    for (int r = 0; r < rounds; ++r) {
      best_mine = std::min(best_mine, ms_per_call(min_ms, [&] { mine.step(); }));
      best_theirs = std::min(best_theirs, ms_per_call(min_ms, [&] { theirs.step(); }));
    }
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lldx%lld", static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                  static_cast<long long>(s[2]), static_cast<long long>(s[3]));
    std::printf("%-22s %14.3f %14.3f %8.2f\n", name, best_mine, best_theirs, best_mine / best_theirs);
  }
}

int run(const std::string& layer, int threads, int rounds, double min_ms) {
  set_cpu_threads(threads);
  std::printf("# mirror-layer-bench: %d thread(s), %d alternated rounds | %s\n", threads, rounds,
              cpu_kernels_description().c_str());
  if (layer == "all" || layer == "batchnorm") run_batch_norm(rounds, min_ms);
  if (layer == "all" || layer == "conv2d") run_conv(rounds, min_ms);
  if (layer == "all" || layer == "maxpool") run_max_pool(rounds, min_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "CNN layer choices measured: BatchNorm2d loops vs oneDNN, Conv2d plain vs blocked layouts, MaxPool2d on blocked "
      "inputs vs reorders around NCHW pooling"};
  int threads = 1, rounds = 7;
  std::string layer = "all";
  app.add_option("--layer", layer, "which comparison")->check(CLI::IsMember({"all", "batchnorm", "conv2d", "maxpool"}));
  double min_ms = 30;
  app.add_option("--threads", threads, "CPU threads")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "alternated rounds per shape (the best round counts)")->check(CLI::PositiveNumber);
  app.add_option("--min-ms", min_ms, "milliseconds per implementation and round")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(layer, threads, rounds, min_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
