// mirror_eval.cc — `mirror-eval`: evaluate a checkpoint on a split: loss, accuracy, per-class accuracy, the
// confusion matrix, and optionally one CSV row per sample; for a language model on a token dataset, the loss,
// perplexity and bits per byte over the split's consecutive windows. One process, or under mpirun (each rank takes a
// disjoint contiguous part; the sums are reduced; rows are written in sample order).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/data/dataset.h"
#include "mirror/error.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/checkpoint_model.h"
#include "mirror/nn/device.h"
#include "mirror/nn/precision.h"
#include "mirror/train/evaluate.h"
#include "mirror/train/language_model.h"
#include "mirror/train/setup_agreement.h"
#include "mirror/nn/model.h"
#include "mirror/nn/model_build.h"
#include "mirror/train/cli_checks.h"
#include "mpi_main.h"

namespace {
using namespace mirror;

struct EvalOptions {
  std::string checkpoint, data, split = "test", predict;
  nn::DeviceRequest device = nn::DeviceRequest::kAuto;
  nn::Precision precision = nn::Precision::kFloat32;
  std::int64_t batch_size = 0;  // 0: 256 samples, or 8 windows of a language model
  int blas_threads = 1;
  double timeout_s = 300;
  bool best = false;  // --best: DIR/best.h5 instead of the newest checkpoint
  bool check_collectives = true;
};

// A language model: the split's consecutive windows (each once, over all ranks); rank 0 prints the checkpoint
// and the split to stderr and one line to stdout: "loss X  perplexity P  bits_per_byte B" (bits per byte where
// the dataset records the split's bytes).
int report_language_model(const EvalOptions& o, const std::string& path, const train::CheckpointState& state,
                          nn::Model& model, const data::Dataset& dataset, coll::Communicator& control) {
  const train::EvalResult r = train::evaluate_tokens(model, dataset, o.split, o.batch_size > 0 ? o.batch_size : 8,
                                                     control);
  if (control.rank() != 0) return 0;
  std::fprintf(stderr, "checkpoint %s (step %lld, tokenizer %s), compute %s\n", path.c_str(),
               static_cast<long long>(state.step), state.tokenizer.c_str(), nn::to_string(o.precision));
  std::fprintf(stderr, "split %s of %s: %lld target tokens in windows of %lld on %d rank(s)\n", o.split.c_str(),
               o.data.c_str(), static_cast<long long>(r.count), static_cast<long long>(model.input_sample_shape()[0]),
               control.size());
  const double loss = r.mean_loss();
  std::printf("loss %.4f  perplexity %.4f", loss, train::perplexity(loss));
  const data::SplitInfo& split = dataset.split(o.split);
  const std::optional<double> bpb = train::bits_per_byte(loss, split.size, split.text_bytes);
  if (bpb) std::printf("  bits_per_byte %.4f", *bpb);
  std::printf("\n");
  return 0;
}

int run(const EvalOptions& o, int rank) {
  coll::CommOptions comm_options;
  comm_options.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  comm_options.check_consistency = o.check_collectives;
  auto control = coll::make_communicator(comm_options);

  // Every rank reads the checkpoint itself (read-only, small next to the data): no broadcast to wait on. What
  // every rank finds wrong here ends the job with one error line and exit code 3 (setup_agreement.h).
  std::string path;
  train::CheckpointState state;
  std::optional<data::Dataset> dataset_holder;
  std::unique_ptr<nn::Model> model_holder;
  train::run_agreed_setup(*control, [&] {
    path = train::resolve_checkpoint(o.checkpoint, o.best, std::cerr);
    state = train::read_checkpoint(path, train::CheckpointParts::kModel);
    dataset_holder.emplace(data::Dataset::open(o.data));
    const nn::Device device = nn::resolve_device(o.device, coll::MpiRuntime::local_rank(), o.blas_threads);
    nn::set_compute_precision(o.precision, device);
    model_holder = train::model_from_checkpoint(path, state, device);
    train::check_dataset_fits(*model_holder, *dataset_holder);
    MIRROR_CHECK(!dataset_holder->info().text || o.predict.empty(), kInvalidArgument,
                 "--predict writes one row per classified sample; " << o.data
                     << " is a token dataset for a language model (its evaluation is the loss, perplexity and bits "
                        "per byte)");
  });
  const data::Dataset& dataset = *dataset_holder;
  nn::Model& model = *model_holder;

  if (dataset.info().text) return report_language_model(o, path, state, model, dataset, *control);
  // Predictions: each rank writes its rows to a part file; rank 0 joins them in rank (= sample) order.
  std::ofstream part;
  std::string part_path;
  if (!o.predict.empty()) {
    part_path = o.predict + ".part" + std::to_string(rank);
    part.open(part_path, std::ios::trunc);
    MIRROR_CHECK(part.good(), kIo, "cannot write " << part_path);
  }
  const train::EvalResult r = train::evaluate(model, dataset, o.split, o.batch_size > 0 ? o.batch_size : 256, *control,
                                              [&](const train::Prediction& p) {
                                                if (!part.is_open()) return;
                                                part << p.index << ',' << p.label << ',' << p.predicted;
                                                for (float q : p.probabilities) part << ',' << q;
                                                part << '\n';
                                              });
  if (part.is_open()) {
    part.close();
    MIRROR_CHECK(!part.fail(), kIo, "writing " << part_path << " failed");
  }
  control->barrier();
  if (rank == 0 && !o.predict.empty()) {
    const std::string tmp = o.predict + ".tmp";
    {
      std::ofstream csv(tmp, std::ios::trunc);
      csv << "index,label,predicted";
      for (std::int64_t c = 0; c < r.num_classes; ++c) csv << ",p" << c;
      csv << '\n';
      for (int k = 0; k < control->size(); ++k) {
        const std::string pk = o.predict + ".part" + std::to_string(k);
        std::ifstream in(pk);
        csv << in.rdbuf();
        in.close();
        std::filesystem::remove(pk);
      }
      MIRROR_CHECK(csv.good(), kIo, "writing " << tmp << " failed");
    }
    std::filesystem::rename(tmp, o.predict);
  }
  if (rank != 0) return 0;
  std::printf("checkpoint %s (step %lld)\n", path.c_str(), static_cast<long long>(state.step));
  std::printf("split %s of %s: %lld samples on %d rank(s)\n", o.split.c_str(), o.data.c_str(),
              static_cast<long long>(r.count), control->size());
  std::printf("loss %.4f  accuracy %.4f\n", r.mean_loss(), r.accuracy());
  std::printf("per-class accuracy:\n");
  const auto& names = dataset.info().class_names;  // the dataset's optional class_names attribute
  for (std::int64_t c = 0; c < r.num_classes; ++c) {
    const char* name = c < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(c)].c_str() : "";
    std::printf("  class %2lld  %.4f  %s\n", static_cast<long long>(c), r.class_accuracy(c), name);
  }
  std::printf("confusion matrix (rows: label, columns: predicted):\n");
  for (std::int64_t a = 0; a < r.num_classes; ++a) {
    std::printf("  %2lld |", static_cast<long long>(a));
    for (std::int64_t p = 0; p < r.num_classes; ++p)
      std::printf(" %6lld", static_cast<long long>(r.confusion[static_cast<std::size_t>(a * r.num_classes + p)]));
    std::printf("\n");
  }
  if (!o.predict.empty()) std::printf("predictions: %s\n", o.predict.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tools::run_mpi_main(argc, argv, [](int& argc, char**& argv, int rank) {
    EvalOptions o;
    CLI::App app{"mirror-eval: loss, accuracy, per-class accuracy and confusion matrix of a checkpoint on a split",
                 "mirror-eval"};
    app.add_option("--checkpoint", o.checkpoint, "checkpoint file, or a directory (its newest valid checkpoint)")
        ->required();
    app.add_option("--data", o.data, "HDF5 dataset (made by mirror-data)")->required();
    app.add_flag("--best", o.best, "with a directory: its best.h5 (trainer --keep-best) instead of the newest");
    cli::install_sentence_errors(app);
    app.add_option("--split", o.split, "split to evaluate")->check(CLI::IsMember({"test", "train"}))
        ->capture_default_str();
    app.add_option("--batch-size", o.batch_size,
                   "samples per forward pass (default 256), or windows for a language model (default 8)")
        ->check(cli::positive_integer());
    app.add_option("--predict", o.predict, "write one CSV row per sample: index,label,predicted,p0..pC-1");
    app.add_option("--device", o.device, "auto, cpu or cuda")
        ->transform(cli::enum_choice<nn::DeviceRequest>(
            {{"auto", nn::DeviceRequest::kAuto}, {"cpu", nn::DeviceRequest::kCpu}, {"cuda", nn::DeviceRequest::kCuda}}))
        ->default_str("auto");
    cli::add_choice(app, "--precision", o.precision, nn::kPrecisionNames,
                    "fp32 (default) or bf16: the products with bfloat16 operands, as trainer --precision");
    app.add_option("--blas-threads", o.blas_threads, "OpenBLAS threads per rank")->check(cli::integer_in(1, 256))
        ->capture_default_str();
    app.add_option("--check-collectives", o.check_collectives,
                   "on: every collective first checks that all ranks issued the same call; off: skip it")
        ->transform(cli::enum_choice<int>({{"on", 1}, {"off", 0}}))->default_str("on");
    app.add_option("--timeout", o.timeout_s, "seconds a collective may wait")->check(cli::number_in(0.1, 86400.0))
        ->capture_default_str();
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (rank != 0) return e.get_exit_code() == 0 ? 0 : 2;
      return app.exit(e) == 0 ? 0 : 2;
    }
    return run(o, rank);
  });
}
