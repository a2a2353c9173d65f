// mirror_data.cc — the mirror-data program: `fashion-mnist` and `synth` write datasets in Mirror's
// format, `import` converts the user's own data (.npy, .npz, HDF5, image folders), `text` tokenizes text files
// into a token dataset for language models, `inspect` describes one,
// `bench` measures the reader (see scripts/bench_data.sh).
#include <CLI/CLI.hpp>

#include "mirror/cli_checks.h"

#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "bench.h"
#include "import_command.h"
#include "text_command.h"
#include "mirror/data/convert.h"
#include "mirror/data/train_loader.h"
#include "mirror/error.h"

namespace {

// Rank and world size of this process when started by mpirun (mirror-data does not use MPI itself).
int env_int(const char* a, const char* b, int fallback) {
  for (const char* name : {a, b}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return fallback;
}

void add_write_options(CLI::App* cmd, mirror::data::WriteOptions& w) {
  cmd->add_option("--shards", w.shards, "Write K shard files <stem>-IIIII-of-KKKKK.h5 instead of one file")
      ->check(mirror::cli::integer_in(1, 99999));
  cmd->add_option("--chunk", w.chunk_samples, "Samples per HDF5 chunk of x (0: about 256 KiB per chunk)")
      ->check(mirror::cli::non_negative_integer());
  cmd->add_option("--gzip", w.gzip_level, "Deflate level 1-9 for x (0: none; fastest random reads)")
      ->check(mirror::cli::integer_in(0, 9));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mirror-data: datasets in Mirror's HDF5 format (docs/dataset-format.md)"};
  app.require_subcommand(1);
  mirror::cli::install_sentence_errors(app);  // "--test-fraction must be a number in [0, 1], got 1.5"

  std::string out, src = mirror::data::kFashionMnistDir, path;
  mirror::data::WriteOptions fm_write, synth_write;
  auto* fm = app.add_subcommand("fashion-mnist", "Convert Fashion-MNIST (Debian package dataset-fashion-mnist) "
                                                 "to 60000 train + 10000 test 28x28 uint8 samples, 10 classes");
  fm->add_option("--out", out, "Output file (with --shards K: <stem>-IIIII-of-KKKKK.h5)")->required();
  fm->add_option("--src", src, "Directory of the IDX .gz files")->capture_default_str();
  add_write_options(fm, fm_write);

  mirror::data::SynthOptions synth;
  auto* sy = app.add_subcommand("synth", "Write a synthetic, learnable classification set (Gaussian clusters, float32)");
  sy->add_option("--out", out, "Output file")->required();
  sy->add_option("--train", synth.train, "Training samples")->capture_default_str()->check(mirror::cli::positive_integer());
  sy->add_option("--test", synth.test, "Test samples")->capture_default_str()->check(mirror::cli::positive_integer());
  sy->add_option("--features", synth.features, "Features per sample (flat samples)")->capture_default_str()->check(mirror::cli::positive_integer());
  sy->add_option("--shape", synth.shape, "Image-shaped samples instead: H,W or C,H,W (e.g. 1,12,12); a learnable "
                                         "pixel pattern per class")->delimiter(',')->expected(2, 3);
  sy->add_option("--classes", synth.classes, "Number of classes (>= 2)")->capture_default_str()->check(mirror::cli::integer_in(2, 1 << 20));
  sy->add_option("--seed", synth.seed, "Random seed")->capture_default_str();
  sy->add_option("--spread", synth.spread, "Noise standard deviation per feature")->capture_default_str();
  add_write_options(sy, synth_write);

  ImportCommand import_cmd(app);
  TextCommand text_cmd(app);

  auto* in = app.add_subcommand("inspect", "Print splits, shapes, dtypes, class histograms, chunking and size on disk");
  in->add_option("file", path, "Dataset file (or any shard of a sharded dataset)")->required();

  mirror::data::BenchOptions bench;
  bench.rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", 0);
  bench.world = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", 1);
  auto* be = app.add_subcommand("bench", "Reader throughput per rank and time waiting for data with prefetch on/off "
                                         "(run under mpirun for several ranks; rank and size come from its environment)");
  be->add_option("--data", bench.path, "Dataset file")->required();
  be->add_option("--batch", bench.batch, "Samples per rank per step")->capture_default_str()->check(mirror::cli::positive_integer());
  be->add_option("--steps", bench.steps, "Steps to time per measurement (0: one epoch)")->capture_default_str();
  be->add_option("--compute-ms", bench.compute_ms, "Simulated compute per step, ms")->capture_default_str();
  be->add_flag("--busy", bench.busy, "Simulate compute with a busy loop (CPU training) instead of a sleep (GPU training)");
  be->add_option("--prefetch", bench.prefetch_depth, "Prefetch depth of the 'on' run")->capture_default_str();
  be->add_option("--sharding", bench.sharding, mirror::data::kShardingHelp)
      ->capture_default_str()->check(CLI::IsMember({"index", "files"}));
  be->add_option("--rank", bench.rank, "This process's rank")->capture_default_str();
  be->add_option("--world", bench.world, "Number of ranks")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // a bad command line exits 2, as in every Mirror program
  }
  try {
    if ((*fm || *sy) && std::filesystem::path(out).has_parent_path()) {
      // Like `mkdir -p`: --out data/fmnist.h5 works in a fresh checkout.
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(out).parent_path(), ec);
      if (ec) throw std::runtime_error("cannot create the directory of --out " + out + ": " + ec.message());
    }
    if (*fm) {
      for (const auto& f : mirror::data::convert_fashion_mnist(src, out, fm_write)) std::printf("wrote %s\n", f.c_str());
    } else if (*sy) {
      if (!synth.shape.empty() && sy->count("--features") == 0) synth.features = 0;  // from the shape
      for (const auto& f : mirror::data::write_synthetic(out, synth, synth_write)) std::printf("wrote %s\n", f.c_str());
    } else if (import_cmd.chosen()) {
      import_cmd.run();
    } else if (text_cmd.chosen()) {
      text_cmd.run();
    } else if (*in) {
      std::fputs(mirror::data::inspect_report(path).c_str(), stdout);
    } else if (*be) {
      mirror::data::run_bench(bench, std::cout);
    }
  } catch (const std::exception& e) {
    if (bench.world > 1 && *be) {
      std::fprintf(stderr, "[rank %d] error: %s\n", bench.rank, e.what());
    } else {
      std::fprintf(stderr, "error: %s\n", e.what());
    }
    return 1;
  }
  return 0;
}
