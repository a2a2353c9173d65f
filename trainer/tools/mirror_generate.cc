// mirror_generate.cc — `mirror-generate`: text from a language model's checkpoint (mirror/train/generate.h).
// Writes exactly the prompt and its continuation of --max-new-tokens tokens to stdout, each token as soon as it
// is drawn, then a newline; the checkpoint, model, step and seed go to stderr. One process (no MPI), on the CPU or
// with --device cuda on a GPU (its key/value cache in GPU memory). Exit codes (docs/training.md#exit-codes): 2 for a bad command line, 3 for a
// checkpoint or prompt refused before generating (not a language model, a token outside its vocabulary), 1 for a
// failure while generating.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "mirror/agreed_error.h"
#include "mirror/cli_checks.h"
#include "mirror/error.h"
#include "mirror/nn/model_description.h"
#include "mirror/nn/device.h"
#include "mirror/nn/precision.h"
#include "mirror/nn/model.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/checkpoint_model.h"
#include "mirror/train/generate.h"
#include "mirror/data/tokenizer.h"
#include "mirror/train/text_tokens.h"

namespace {
using namespace mirror;

struct GenerateCommand {
  std::string checkpoint, prompt;
  bool best = false;  // --best: DIR/best.h5 instead of the newest checkpoint
  int blas_threads = 1;
  nn::DeviceRequest device = nn::DeviceRequest::kCpu;
  nn::Precision precision = nn::Precision::kFloat32;
  train::GenerateOptions generate;
};

// What generation needs, read and checked before the first token.
struct Loaded {
  std::string path;
  train::CheckpointState state;  // without its tensors (they are in the model)
  std::unique_ptr<nn::Model> model;
  std::unique_ptr<data::Tokenizer> tokenizer;  // the checkpoint's (its name and files)
  std::vector<std::int32_t> prompt;
};

// A number in (0, 1] (--top-p).
CLI::Validator open_closed_unit_interval() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool ok = !s.empty() && end == s.c_str() + s.size() && v > 0.0 && v <= 1.0;
        return ok ? "" : "must be a number in (0, 1], got " + s;
      },
      "NUM in (0, 1]", "open_closed_unit_interval");
}

CLI::Validator non_empty_text() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "TEXT",
                        "non_empty_text");
}

void add_flags(CLI::App& app, GenerateCommand& c) {
  train::GenerateOptions& g = c.generate;
  app.add_option("--checkpoint", c.checkpoint, "checkpoint file, or a directory (its newest valid checkpoint)")
      ->required();
  app.add_option("--prompt", c.prompt, "the text to continue (written to stdout first)")->required()
      ->check(non_empty_text());
  app.add_flag("--best", c.best, "with a directory: its best.h5 (trainer --keep-best) instead of the newest");
  app.add_option("--max-new-tokens", g.max_new_tokens, "tokens to generate after the prompt")
      ->check(cli::non_negative_integer())->capture_default_str();
  app.add_option("--temperature", g.sampling.temperature, "divides the logits before the softmax; 0: greedy")
      ->check(cli::non_negative_number())->capture_default_str();
  app.add_option("--top-k", g.sampling.top_k, "draw among the k most likely tokens only; 0: all")
      ->check(cli::non_negative_integer())->capture_default_str();
  app.add_option("--top-p", g.sampling.top_p,
                 "draw among the fewest most likely tokens whose probability reaches p (nucleus); 1: all")
      ->check(open_closed_unit_interval())->capture_default_str();
  app.add_option("--seed", g.seed, "seed of the draws: the same seed gives the same text")
      ->check(cli::non_negative_integer())->capture_default_str();
  app.add_option("--device", c.device, "cpu (default), cuda or auto (CUDA when a GPU is visible)")
      ->transform(cli::enum_choice<nn::DeviceRequest>(
          {{"cpu", nn::DeviceRequest::kCpu}, {"cuda", nn::DeviceRequest::kCuda}, {"auto", nn::DeviceRequest::kAuto}}))
      ->default_str("cpu");
  cli::add_choice(app, "--precision", c.precision, nn::kPrecisionNames,
                  "fp32 (default) or bf16: the linear layers with bfloat16 operands, as trainer --precision (attention "
                  "over the key/value cache stays float32)");
  app.add_option("--blas-threads", c.blas_threads, "CPU threads")->check(cli::integer_in(1, 256))
      ->capture_default_str();
  cli::install_sentence_errors(app);
}

// The checkpoint must hold a language model (a model that takes token ids [context]) with a tokenizer.
void check_language_model(const std::string& path, const train::CheckpointState& state) {
  const bool takes_tokens = nn::sequence_shape(nn::resolve_model_description(state.model_description)).takes_tokens;
  MIRROR_CHECK(!takes_tokens || !state.tokenizer.empty(), kInvalidArgument,
               "checkpoint " << path << " holds a language model but has no tokenizer (imported weights without "
                             << "vocab.json and merges.txt?); mirror-generate encodes the prompt with the checkpoint's "
                                "tokenizer: import the model with its tokenizer files, or fine-tune it on a token dataset");
  MIRROR_CHECK(!state.tokenizer.empty(), kInvalidArgument,
               "checkpoint " << path << " is not a language model (it records no tokenizer: its model '"
                             << state.model_spec << "' was trained on " << state.num_classes
                             << " classes, not on a token dataset); mirror-generate needs a language model's checkpoint");
  MIRROR_CHECK(state.sample_shape.size() == 1 && state.sample_shape[0] >= 1, kFormat,
               "checkpoint " << path << " records tokenizer '" << state.tokenizer
                             << "' but its input samples are not token windows [context]");
}

// The prompt's tokens, each inside the model's vocabulary (the error names the token and where it is).
std::vector<std::int32_t> prompt_tokens(const std::string& prompt, const std::string& path,
                                        const train::CheckpointState& state, const data::Tokenizer& tokenizer) {
  std::vector<std::int32_t> tokens = tokenizer.encode(prompt);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    MIRROR_CHECK(tokens[i] < state.num_classes, kInvalidArgument,
                 "the prompt's token " << tokens[i] << " (position " << i << " of " << tokens.size()
                                       << ", tokenizer " << state.tokenizer << ") is outside the vocabulary [0, "
                                       << state.num_classes << ") of the model in " << path);
  return tokens;
}

Loaded load(const GenerateCommand& c) {
  Loaded l;
  l.path = train::resolve_checkpoint(c.checkpoint, c.best, std::cerr);
  l.state = train::read_checkpoint(l.path, train::CheckpointParts::kModel);
  check_language_model(l.path, l.state);
  l.tokenizer = train::checkpoint_tokenizer(l.state);
  l.prompt = prompt_tokens(c.prompt, l.path, l.state, *l.tokenizer);
  const nn::Device device = nn::resolve_device(c.device, 0, c.blas_threads);
  nn::set_compute_precision(c.precision, device);
  l.model = train::model_from_checkpoint(l.path, l.state, device);
  l.state.params.clear();
  return l;
}

void write_bytes(const std::string& bytes) {
  std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  std::fflush(stdout);
}

int write_generation(const GenerateCommand& c, Loaded& l) {
  const train::CheckpointState& s = l.state;
  std::fprintf(stderr, "checkpoint %s (step %lld): model %s, %lld parameters, context %lld, vocabulary %lld, "
               "tokenizer %s; seed %llu; compute %s\n",
               l.path.c_str(), static_cast<long long>(s.step), s.model_spec.empty() ? "(model file)" : s.model_spec.c_str(),
               static_cast<long long>(l.model->num_parameters()), static_cast<long long>(s.sample_shape[0]),
               static_cast<long long>(s.num_classes), s.tokenizer.c_str(),
               static_cast<unsigned long long>(c.generate.seed), nn::to_string(c.precision));
  write_bytes(c.prompt);
  train::GenerateOptions options = c.generate;
  options.token_limit = l.tokenizer->vocab_size();  // never a token the tokenizer cannot write
  // Tokens decode one at a time: every tokenizer's decode is compositional (mirror/data/tokenizer.h).
  train::generate(*l.model, l.prompt, options, [&](std::int32_t token) {
    write_bytes(l.tokenizer->decode(std::span<const std::int32_t>(&token, 1)));
  });
  write_bytes("\n");
  return exit_code::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  GenerateCommand c;
  CLI::App app{"mirror-generate: continue a prompt with a language model's checkpoint", "mirror-generate"};
  add_flags(app, c);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_code::kOk : exit_code::kUsage;
  }
  Loaded loaded;
  try {
    loaded = load(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_code::kBadInput;
  }
  try {
    return write_generation(c, loaded);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_code::kFailure;
  }
}
