// bench_fusion.cc — `mirror-fusion-bench`: what gradient fusion buys. 200 tensors of mixed sizes shaped like a
// convolutional network's gradients (~25 MB in all) averaged across ranks three ways, timed in one run:
//   flat      one allreduce of all the bytes (the lower bound)
//   buckets   GradientBucketer with --bucket-mb buckets (what the trainer does)
//   per-tensor one allreduce per tensor (what no fusion costs)
// The gradients live in a shared buffer of the communicator (allocate_shared), as the trainer's do, unless
// --shared-buffers 0. Prints median times over --iters and the ratios. Run under mpirun:
// mpirun -np 2 mirror-fusion-bench
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/train/grad_sync.h"
#include "mpi_main.h"

namespace {
using namespace mirror;
using Clock = std::chrono::steady_clock;

// 66 blocks of (conv weight, norm scale, norm shift) + classifier weight and bias = 200 tensors, widths
// growing 64 -> 2048 like a ResNet's stages, scaled so that the total is `total_bytes`.
std::vector<std::size_t> model_like_sizes(std::size_t total_bytes) {
  std::vector<double> raw;
  for (int i = 0; i < 66; ++i) {
    const double channels = 64.0 * std::pow(2.0, 5.0 * i / 65.0);
    const double kernel = (i % 3 == 1) ? 9.0 : 1.0;  // bottleneck: 1x1, 3x3, 1x1
    raw.push_back(channels * channels * kernel / 4.0);
    raw.push_back(channels);
    raw.push_back(channels);
  }
  raw.push_back(2048.0 * 1000.0);
  raw.push_back(1000.0);
  double sum = 0;
  for (double r : raw) sum += r;
  const double scale = static_cast<double>(total_bytes / sizeof(float)) / sum;
  std::vector<std::size_t> sizes;
  for (double r : raw) sizes.push_back(std::max<std::size_t>(1, static_cast<std::size_t>(r * scale)));
  return sizes;
}

template <typename Fn>
double median_seconds(coll::Communicator& comm, int warmup, int iters, Fn&& fn) {
  std::vector<double> t;
  for (int i = 0; i < warmup + iters; ++i) {
    comm.barrier();
    const auto t0 = Clock::now();
    fn();
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    comm.allreduce(&dt, &dt, 1, coll::DataType::kFloat64, coll::ReduceOp::kMax);  // the slowest rank counts
    if (i >= warmup) t.push_back(dt);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  return tools::run_mpi_main(argc, argv, [](int& argc, char**& argv, int rank) {
    double total_mb = 25.0;
    std::vector<double> bucket_mbs{1.0, 4.0, 25.0};
    int iters = 10, warmup = 2, shared = 1;
    std::string transport = "auto";
    CLI::App app{"mirror-fusion-bench: gradient fusion (buckets) against one allreduce per tensor", "mirror-fusion-bench"};
    app.add_option("--total-mb", total_mb, "bytes of all gradients, in MB")->check(CLI::Range(0.01, 4096.0))
        ->capture_default_str();
    app.add_option("--bucket-mb", bucket_mbs, "bucket sizes to time, in MB")->capture_default_str();
    app.add_option("--iters", iters, "timed repetitions (median reported)")->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--transport", transport, "host transport: auto, shm or mpi")
        ->check(CLI::IsMember({"auto", "shm", "mpi"}))->capture_default_str();
    app.add_option("-R,--shared-buffers", shared,
                   "gradients in a shared buffer of the communicator (1, as the trainer) or ordinary memory (0)")
        ->check(CLI::Range(0, 1))->capture_default_str();
    app.add_option("--warmup", warmup, "untimed repetitions first")->check(CLI::Range(0, 100))->capture_default_str();
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (rank != 0) return e.get_exit_code() == 0 ? 0 : 2;
      return app.exit(e) == 0 ? 0 : 2;
    }
    coll::CommOptions options;
    options.backend = coll::parse_backend("host", transport);
    auto comm = coll::make_communicator(options);
    const std::vector<std::size_t> sizes = model_like_sizes(static_cast<std::size_t>(total_mb * 1024 * 1024));
    std::vector<train::GradSlice> slices;
    std::size_t total = 0;
    for (std::size_t n : sizes) {
      slices.push_back({total, n});
      total += n;
    }
    coll::SharedBuffer shared_grads;
    std::vector<float> own_grads;
    float* grads = nullptr;
    if (shared) {
      shared_grads = comm->allocate_shared(total * sizeof(float));
      grads = shared_grads.as<float>();
    } else {
      own_grads.resize(total);
      grads = own_grads.data();
    }
    std::fill(grads, grads + total, 1.0f);

    const double flat = median_seconds(*comm, warmup, iters, [&] {
      comm->allreduce(grads, grads, total, coll::DataType::kFloat32, coll::ReduceOp::kAvg);
    });
    const double per_tensor = median_seconds(*comm, warmup, iters, [&] {
      for (const auto& s : slices)
        comm->allreduce(grads + s.offset, grads + s.offset, s.numel, coll::DataType::kFloat32,
                        coll::ReduceOp::kAvg);
    });
    if (rank == 0) {
      std::printf("# mirror-fusion-bench: %d ranks (%s, %s buffer), %zu tensors, %.1f MB (smallest %zu, largest "
                  "%zu floats), median of %d\n", comm->size(), coll::transport_name(*comm),
                  shared ? "shared" : "ordinary", sizes.size(), total * 4.0 / 1e6,
                  *std::min_element(sizes.begin(), sizes.end()), *std::max_element(sizes.begin(), sizes.end()),
                  iters);
      std::printf("%-22s %8s %12s %12s\n", "method", "calls", "time (ms)", "vs flat");
      std::printf("%-22s %8d %12.2f %12.2f\n", "flat (one allreduce)", 1, flat * 1e3, 1.0);
    }
    for (double mb : bucket_mbs) {
      train::GradientBucketer bucketer(*comm, grads, slices, static_cast<std::size_t>(mb * 1024 * 1024));
      const double t = median_seconds(*comm, warmup, iters, [&] {
        bucketer.begin_step(true);
        for (std::size_t k = slices.size(); k-- > 0;) bucketer.on_grad_ready(k);  // backward order
        bucketer.finish();
      });
      if (rank == 0) {
        char name[64];
        std::snprintf(name, sizeof(name), "buckets of %g MB", mb);
        std::printf("%-22s %8zu %12.2f %12.2f\n", name, bucketer.bucket_count(), t * 1e3, t / flat);
      }
    }
    if (rank == 0)
      std::printf("%-22s %8zu %12.2f %12.2f\n", "one per tensor", slices.size(), per_tensor * 1e3, per_tensor / flat);
    return 0;
  });
}
