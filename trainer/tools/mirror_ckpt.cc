// mirror_ckpt.cc — `mirror-ckpt`: look into checkpoints without training.
//   list DIR          step, epoch, last metrics, size, valid or not (with the reason); the checkpoint that
//                     best.h5 (--keep-best) holds is marked "best", and best.h5 listed itself
//   inspect FILE      header, configuration, tensors with shapes and norms
//   verify FILE       every checksum; exit 1 when corrupt
//   diff A B [--tol]  max |a - b| per tensor; exit 0 when all <= tol, 1 otherwise (a group one file lacks
//                     entirely, e.g. an imported checkpoint's optimizer state, is "not compared")
//   export C --format safetensors|hf-gpt2 --out DIR    the model to other tools' files (model_interchange.h)
//   import DIR --format safetensors|hf-gpt2 --out C.h5  and back, as a checkpoint at step 0
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "mirror/error.h"
#include "mirror/nn/model_build.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/checkpoint_model.h"
#include "mirror/train/cli_checks.h"
#include "mirror/train/model_interchange.h"

namespace {
using namespace mirror::train;

int list_command(const std::string& dir) {
  const auto entries = list_checkpoints(dir, true);
  // best.h5 (trainer --keep-best): the step it holds marks its ckpt-*.h5, when that is still there.
  const std::string best_path = (std::filesystem::path(dir) / "best.h5").string();
  std::int64_t best_step = -1;
  std::string best_problem;
  if (std::filesystem::exists(best_path)) {
    try {
      best_step = read_checkpoint(best_path).step;
    } catch (const mirror::Error& e) {
      best_problem = e.message();
    }
  }
  if (entries.empty() && best_step < 0 && best_problem.empty()) {
    std::cout << "no checkpoints (ckpt-*.h5) in " << dir << "\n";
    return 0;
  }
  std::printf("%-22s %10s %6s %10s  %-7s %s\n", "file", "step", "epoch", "bytes", "status", "last metrics / problem");
  for (const auto& e : entries) {
    const std::string name = e.path.substr(e.path.find_last_of('/') + 1);
    const char* status = !e.valid ? "CORRUPT" : e.step == best_step ? "best" : "valid";
    std::printf("%-22s %10lld %6lld %10ju  %-7s %s\n", name.c_str(), static_cast<long long>(e.step),
                static_cast<long long>(e.epoch), e.bytes, status, e.valid ? e.last_metrics.c_str() : e.problem.c_str());
  }
  if (best_step >= 0)
    std::printf("%-22s %10lld  (the best checkpoint, kept by --keep-best)\n", "best.h5", static_cast<long long>(best_step));
  else if (!best_problem.empty())
    std::printf("%-22s %10s  CORRUPT %s\n", "best.h5", "-", best_problem.c_str());
  return 0;
}

void print_tensors(const char* title, const std::vector<NamedTensor>& tensors) {
  std::printf("%s:\n", title);
  for (const NamedTensor& t : tensors) {
    double sq = 0, lo = INFINITY, hi = -INFINITY;
    for (float v : t.values) {
      sq += static_cast<double>(v) * v;
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
    std::string shape = "[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
    shape += "]";
    std::printf("  %-20s %-14s norm %-12.6g min %-12.6g max %-12.6g\n", t.name.c_str(), shape.c_str(), std::sqrt(sq),
                t.values.empty() ? 0.0 : lo, t.values.empty() ? 0.0 : hi);
  }
}

int inspect_command(const std::string& file) {
  const CheckpointState s = read_checkpoint(file);
  std::printf("checkpoint %s (checksums verified)\n", file.c_str());
  std::printf("  step %lld, epoch %lld, next micro-batch %lld, world size %d, seed %llu\n",
              static_cast<long long>(s.step), static_cast<long long>(s.epoch),
              static_cast<long long>(s.epoch_micro_step), s.world_size, static_cast<unsigned long long>(s.seed));
  std::string shape;
  for (std::size_t i = 0; i < s.sample_shape.size(); ++i) {
    if (i) shape += ", ";
    shape += std::to_string(s.sample_shape[i]);
  }
  std::printf("  format version %lld\n", static_cast<long long>(s.format_version));
  std::printf("  model %s: samples [%s] (%lld features), %lld classes; optimizer %s at step %lld\n",
              s.model_spec.c_str(), shape.c_str(), static_cast<long long>(s.input_features),
              static_cast<long long>(s.num_classes), s.optimizer_kind.c_str(),
              static_cast<long long>(s.optimizer_step));
  if (s.model_description != s.model_spec) std::printf("  description %s\n", s.model_description.c_str());
  if (!s.tokenizer.empty()) {  // a language model's tokenizer and its files (formats 4 and 5)
    std::printf("  tokenizer %s", s.tokenizer.c_str());
    for (const auto& f : s.tokenizer_files) std::printf("%s %s (%zu bytes)", &f == &s.tokenizer_files.front() ? ":" : ",",
                                                        f.name.c_str(), f.bytes.size());
    std::printf("\n");
  }
  if (s.loss_scale > 0)  // --grad-dtype fp16's dynamic loss scale (format 3)
    std::printf("  loss scale %.17g after %lld good steps in a row\n", s.loss_scale,
                static_cast<long long>(s.loss_scale_good_steps));
  try {  // the layer table of the model the checkpoint describes (built on the CPU, not initialised)
    const auto model = mirror::nn::build_model(s.model_description, s.sample_shape, s.num_classes, mirror::nn::Device{});
    std::printf("layers:\n%s", mirror::nn::layer_table(*model).c_str());
  } catch (const mirror::Error& e) {
    std::printf("layers: (cannot build the model here: %s)\n", e.message().c_str());
  }
  std::printf("configuration:\n");
  try {
    std::cout << nlohmann::json::parse(s.config_json).dump(2) << "\n";
  } catch (const nlohmann::json::exception&) {
    std::cout << s.config_json << "\n";
  }
  print_tensors("parameters", s.params);
  if (!s.buffers.empty()) print_tensors("buffers", s.buffers);
  print_tensors("optimizer state", s.optimizer_state);
  std::printf("metrics:\n%s", s.metrics_jsonl.empty() ? "  (none yet)\n" : s.metrics_jsonl.c_str());
  return 0;
}

int verify_command(const std::string& file) {
  try {
    const CheckpointState s = read_checkpoint(file);
    std::printf("%s: valid (step %lld, %zu parameter tensors, %zu optimizer tensors, all checksums match)\n",
                file.c_str(), static_cast<long long>(s.step), s.params.size(), s.optimizer_state.size());
    return 0;
  } catch (const mirror::Error& e) {
    std::printf("%s: CORRUPT: %s\n", file.c_str(), e.message().c_str());
    return 1;
  }
}

// Compares tensors of the same name; returns false when any differs by more than tol or is missing.
bool diff_group(const char* title, const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b, double tol) {
  bool ok = true;
  std::printf("%s:\n", title);
  for (const NamedTensor& ta : a) {
    const NamedTensor* tb = nullptr;
    for (const NamedTensor& t : b)
      if (t.name == ta.name) tb = &t;
    if (!tb) {
      std::printf("  %-20s only in A\n", ta.name.c_str());
      ok = false;
      continue;
    }
    if (tb->shape != ta.shape) {
      std::printf("  %-20s shapes differ\n", ta.name.c_str());
      ok = false;
      continue;
    }
    double max_diff = 0;
    for (std::size_t i = 0; i < ta.values.size(); ++i) {
      const double d = std::fabs(static_cast<double>(ta.values[i]) - tb->values[i]);
      if (!(d <= max_diff)) max_diff = d;  // NaN propagates as a failure
    }
    const bool within = max_diff <= tol;
    ok = ok && within;
    std::printf("  %-20s max |a-b| %-12.6g %s\n", ta.name.c_str(), max_diff, within ? "ok" : "DIFFERS");
  }
  for (const NamedTensor& tb : b) {
    bool found = false;
    for (const NamedTensor& t : a) found = found || t.name == tb.name;
    if (!found) {
      std::printf("  %-20s only in B\n", tb.name.c_str());
      ok = false;
    }
  }
  return ok;
}

// A group that one file lacks entirely (an imported checkpoint has no optimizer state) is not compared: reported,
// not a difference. Tensors missing inside a group both files have still differ.
bool diff_or_skip_group(const char* title, const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b,
                        double tol) {
  if (a.empty() && b.empty()) return true;
  if (a.empty() || b.empty()) {
    std::printf("%s: not compared (only in %s: %zu tensors)\n", title, a.empty() ? "B" : "A", std::max(a.size(), b.size()));
    return true;
  }
  return diff_group(title, a, b, tol);
}

int diff_command(const std::string& file_a, const std::string& file_b, double tol) {
  const CheckpointState a = read_checkpoint(file_a);
  const CheckpointState b = read_checkpoint(file_b);
  std::printf("A %s (step %lld)\nB %s (step %lld)\ntolerance %g\n", file_a.c_str(), static_cast<long long>(a.step),
              file_b.c_str(), static_cast<long long>(b.step), tol);
  const bool params_ok = diff_or_skip_group("parameters", a.params, b.params, tol);
  const bool buffers_ok = diff_or_skip_group("buffers", a.buffers, b.buffers, tol);
  const bool state_ok = diff_or_skip_group("optimizer state", a.optimizer_state, b.optimizer_state, tol);
  const bool ok = params_ok && buffers_ok && state_ok;
  std::printf("%s\n", ok ? "equal within tolerance" : "DIFFERENT");
  return ok ? 0 : 1;
}

int export_command(const std::string& checkpoint, const std::string& format, const std::string& out) {
  const ModelFormat f = parse_model_format(format);
  const std::string path = resolve_checkpoint(checkpoint, false, std::cerr);
  const CheckpointState s = read_checkpoint(path, CheckpointParts::kModel);
  export_model(s, f, out);
  std::printf("exported %s (step %lld, %zu parameter and %zu buffer tensors) as %s to %s\n", path.c_str(),
              static_cast<long long>(s.step), s.params.size(), s.buffers.size(), format.c_str(), out.c_str());
  return 0;
}

int import_command(const std::string& dir, const std::string& format, const std::string& out) {
  const CheckpointState s = import_model(dir, parse_model_format(format));
  write_checkpoint_file(out, s);
  std::printf("imported %s (%s: %zu parameter and %zu buffer tensors) to %s\n", dir.c_str(), format.c_str(),
              s.params.size(), s.buffers.size(), out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mirror-ckpt: list, inspect, verify, compare, export and import Mirror checkpoints", "mirror-ckpt"};
  app.require_subcommand(1);
  std::string dir, file, file_b;
  double tol = 0.0;
  auto* list = app.add_subcommand("list", "checkpoints in a directory: step, epoch, metrics, size, valid or not");
  list->add_option("dir", dir, "checkpoint directory")->required();
  auto* inspect = app.add_subcommand("inspect", "header, configuration, tensors with shapes and norms");
  inspect->add_option("file", file, "checkpoint file")->required();
  auto* verify = app.add_subcommand("verify", "check every checksum; exit 1 when corrupt");
  verify->add_option("file", file, "checkpoint file")->required();
  auto* diff = app.add_subcommand("diff", "max |a-b| per tensor; exit 0 when all <= --tol, else 1");
  diff->add_option("a", file, "first checkpoint")->required();
  diff->add_option("b", file_b, "second checkpoint")->required();
  diff->add_option("--tol", tol, "largest allowed absolute difference")->check(mirror::cli::non_negative_number());
  std::string format, out;
  auto* exp = app.add_subcommand("export", "a checkpoint's model as safetensors (any model) or Hugging Face GPT-2");
  exp->add_option("checkpoint", file, "checkpoint file, or a directory (its newest valid checkpoint)")->required();
  exp->add_option("--format", format, "safetensors or hf-gpt2")->required()->check(CLI::IsMember({"safetensors", "hf-gpt2"}));
  exp->add_option("--out", out, "directory to write (created; nothing left behind on error)")->required();
  auto* imp = app.add_subcommand("import", "an exported (or Hugging Face GPT-2) directory as a checkpoint at step 0");
  imp->add_option("dir", dir, "directory holding model.safetensors and model.json or config.json")->required();
  imp->add_option("--format", format, "safetensors or hf-gpt2")->required()->check(CLI::IsMember({"safetensors", "hf-gpt2"}));
  imp->add_option("--out", out, "checkpoint file to write (atomically)")->required();
  mirror::cli::install_sentence_errors(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*list) return list_command(dir);
    if (*inspect) return inspect_command(file);
    if (*verify) return verify_command(file);
    if (*exp) return export_command(file, format, out);
    if (*imp) return import_command(dir, format, out);
    return diff_command(file, file_b, tol);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
