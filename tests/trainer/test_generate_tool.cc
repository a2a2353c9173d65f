// test_generate_tool.cc — mirror-generate end to end on checkpoints written here: a tiny two-block GPT (context
// 9, vocabulary 128, byte tokenizer) saved as the trainer saves one. With --temperature 0 its stdout is exactly
// the prompt, the continuation that a greedy loop over the model's full forward (no cache; the window padded,
// which causal attention never sees) computes here, and a newline, also past the context and from a prompt
// longer than it, and within a checkpoint's shorter training windows (--context); sampled text repeats with the same seed and equals the library's generate(); another seed
// gives other text; a directory means its newest checkpoint; a token limit (a tokenizer smaller than the
// vocabulary) bounds every draw. Refused: an image model's checkpoint (exit 3,
// naming the file and that it is not a language model), a prompt byte outside the vocabulary (3), bad flags (2).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mirror/nn/model_build.h"
#include "mirror/train/checkpoint.h"
#include "mirror/train/generate.h"

#ifndef MIRROR_GENERATE
#error "MIRROR_GENERATE (the path of mirror-generate) must be defined by the build"
#endif

namespace mirror::train {
namespace {

constexpr std::int64_t kVocab = 128, kContext = 9;

std::string block(const std::string& p, const std::string& residual_in) {
  return R"({"type": "layernorm", "name": ")" + p + R"(_ln1"},
    {"type": "causal_self_attention", "name": ")" + p + R"(_attn", "heads": 3},
    {"type": "add", "name": ")" + p + R"(_add1", "inputs": [")" + residual_in + R"(", ")" + p + R"(_attn"]},
    {"type": "layernorm", "name": ")" + p + R"(_ln2"},
    {"type": "linear", "name": ")" + p + R"(_fc", "out_features": 48},
    {"type": "gelu", "name": ")" + p + R"(_gelu"},
    {"type": "linear", "name": ")" + p + R"(_proj", "out_features": 12},
    {"type": "add", "name": ")" + p + R"(_add2", "inputs": [")" + p + R"(_add1", ")" + p + R"(_proj"]},)";
}

// The tiny GPT with random weights large enough that its greedy text is not one token repeated.
std::unique_ptr<nn::Model> tiny_gpt() {
  const std::string json = R"({"layers": [
    {"type": "embedding", "name": "wte", "vocab": "classes", "channels": 12},
    {"type": "position_embedding", "name": "wpe", "context": 9},)" +
                           block("h0", "wpe") + block("h1", "h0_add2") + R"(
    {"type": "layernorm", "name": "ln_f"},
    {"type": "linear", "name": "head", "out_features": "classes", "bias": false, "tied_to": "wte"}]})";
  auto model = nn::build_model(nn::ModelDescription::parse(json, "tiny-gpt"), {kContext}, kVocab, nn::Device{});
  model->init_parameters(11);
  std::vector<float> p = model->params_to_host();
  std::mt19937 gen(12);
  std::uniform_real_distribution<float> noise(-0.6f, 0.6f);
  for (float& v : p) v += noise(gen);
  model->params_from_host(p);
  model->set_training(false);
  return model;
}

std::vector<NamedTensor> named(const std::vector<nn::ParamInfo>& infos, const std::vector<float>& flat) {
  std::vector<NamedTensor> out;
  for (const nn::ParamInfo& p : infos)
    out.push_back({p.name, p.shape, std::vector<float>(flat.begin() + p.offset, flat.begin() + p.offset + p.numel)});
  return out;
}

// What the trainer's capture_state records of a model (no optimizer state).
CheckpointState state_of(const nn::Model& model, const std::string& spec, const std::string& tokenizer) {
  CheckpointState s;
  s.step = 12;
  s.seed = 3;
  s.model_spec = spec;
  s.model_description = model.description();
  s.sample_shape = model.input_sample_shape();
  s.input_features = model.input_features();
  s.num_classes = model.num_classes();
  s.config_json = "{}";
  s.tokenizer = tokenizer;
  s.params = named(model.parameters(), model.params_to_host());
  s.buffers = named(model.buffers(), model.buffers_to_host());
  s.optimizer_kind = "sgd";
  return s;
}

struct ToolRun {
  int exit_code = -1;
  std::string out, err;
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

ToolRun run_generate(const std::vector<std::string>& args) {
  const std::string err_file = (std::filesystem::temp_directory_path() / "mirror_generate_test.err").string();
  std::string command = MIRROR_GENERATE;
  for (const std::string& a : args) command += " " + quoted(a);
  command += " 2>" + err_file;
  ToolRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  std::stringstream text;
  text << err.rdbuf();
  r.err = text.str();
  return r;
}

// Greedy continuation over the FULL forward: each step runs the whole window (the last `context` tokens, padded
// with token 0 after the real ones up to the model's kContext) and takes the arg-max of the last real position's
// logits.
std::string greedy_reference(nn::Model& model, const std::string& prompt, int new_tokens,
                             std::size_t context = kContext) {
  std::vector<std::int32_t> tokens;
  for (unsigned char c : prompt) tokens.push_back(c);
  std::string text = prompt;
  for (int k = 0; k < new_tokens; ++k) {
    const std::size_t length = std::min<std::size_t>(tokens.size(), context);
    std::vector<std::int32_t> window(tokens.end() - static_cast<std::ptrdiff_t>(length), tokens.end());
    window.resize(kContext, 0);
    nn::Tensor x({1, kContext}, nn::Device{}, nn::DType::kInt32);
    x.copy_from_host(std::span<const std::int32_t>(window));
    const std::vector<float> logits = model.forward(x).to_host();
    const float* last = logits.data() + (length - 1) * kVocab;
    std::int32_t best = 0;
    for (std::int32_t v = 1; v < kVocab; ++v)
      if (last[v] > last[best]) best = v;
    tokens.push_back(best);
    text.push_back(static_cast<char>(best));
  }
  return text;
}

class GenerateTool : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mirror_generate_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    model_ = tiny_gpt();
    lm_ = (dir_ / "lm.h5").string();
    write_checkpoint_file(lm_, state_of(*model_, "tiny-gpt", "bytes"));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::unique_ptr<nn::Model> model_;
  std::string lm_;
};

TEST_F(GenerateTool, GreedyTextIsThePromptAndTheFullForwardsContinuation) {
  for (const std::string prompt : {"Hi", "ROMEO: to be"}) {  // the second is longer than the context
    const ToolRun r = run_generate({"--checkpoint", lm_, "--prompt", prompt, "--max-new-tokens", "20", "--temperature", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string want = greedy_reference(*model_, prompt, 20) + "\n";
    EXPECT_EQ(r.out, want) << "prompt " << prompt;
    EXPECT_NE(r.err.find("step 12"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tiny-gpt"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("seed 0"), std::string::npos) << r.err;
  }
  // A directory: its newest checkpoint.
  write_checkpoint((dir_ / "ckpt").string(), state_of(*model_, "tiny-gpt", "bytes"));
  const ToolRun r = run_generate({"--checkpoint", (dir_ / "ckpt").string(), "--prompt", "ab", "--max-new-tokens", "5",
                              "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, greedy_reference(*model_, "ab", 5) + "\n");
  EXPECT_NE(r.err.find("ckpt-00000012.h5"), std::string::npos) << r.err;
}

// A checkpoint trained on windows shorter than the model's context (trainer --context 5) records them as its
// sample shape; past them, generation crops to the last 5 tokens, not the position embedding's 9.
TEST_F(GenerateTool, ACheckpointOfShorterWindowsGeneratesWithinThem) {
  CheckpointState s = state_of(*model_, "tiny-gpt", "bytes");
  s.sample_shape = {5};
  s.input_features = 5;
  const std::string path = (dir_ / "short.h5").string();
  write_checkpoint_file(path, s);
  const std::string prompt = "ROMEO: to be";
  const ToolRun r = run_generate({"--checkpoint", path, "--prompt", prompt, "--max-new-tokens", "15", "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, greedy_reference(*model_, prompt, 15, 5) + "\n");
  EXPECT_NE(r.out, greedy_reference(*model_, prompt, 15) + "\n") << "the crop to 5 tokens made no difference here";
}

TEST_F(GenerateTool, TheSameSeedGivesTheSameTextAsTheLibrary) {
  const std::vector<std::string> args = {"--checkpoint", lm_, "--prompt", "xy", "--max-new-tokens", "30",
                                         "--temperature", "0.9", "--top-k", "20", "--top-p", "0.95"};
  auto with_seed = [&](const std::string& seed) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--seed", seed});
    return run_generate(a);
  };
  const ToolRun first = with_seed("7"), again = with_seed("7"), other = with_seed("8");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, again.out);
  EXPECT_NE(first.out, other.out);
  GenerateOptions options;
  options.max_new_tokens = 30;
  options.sampling = {0.9, 20, 0.95};
  options.seed = 7;
  const std::vector<std::int32_t> prompt = {'x', 'y'};
  std::string want = "xy";
  for (std::int32_t t : generate(*model_, prompt, options)) want.push_back(static_cast<char>(t));
  EXPECT_EQ(first.out, want + "\n");
}

TEST_F(GenerateTool, ATokenLimitKeepsEveryDrawBelowIt) {
  GenerateOptions options;
  options.max_new_tokens = 60;
  options.sampling = {3.0, 0, 1.0};
  options.token_limit = 5;  // as a tokenizer smaller than the model's vocabulary
  const std::vector<std::int32_t> prompt = {'q'};
  const std::vector<std::int32_t> drawn = generate(*model_, prompt, options);
  ASSERT_EQ(drawn.size(), 60u);
  for (std::int32_t t : drawn) EXPECT_LT(t, 5);
  EXPECT_NE(std::count(drawn.begin(), drawn.end(), drawn[0]), 60);
}

TEST_F(GenerateTool, AnImageModelsCheckpointIsRefused) {
  auto mlp = nn::build_model("mlp:8", {4}, 3, nn::Device{});
  mlp->init_parameters(1);
  const std::string image = (dir_ / "image.h5").string();
  write_checkpoint_file(image, state_of(*mlp, "mlp:8", ""));
  const ToolRun r = run_generate({"--checkpoint", image, "--prompt", "hello"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("checkpoint " + image + " is not a language model"), std::string::npos) << r.err;
}

TEST_F(GenerateTool, APromptTokenOutsideTheVocabularyIsRefused) {
  const ToolRun r = run_generate({"--checkpoint", lm_, "--prompt", "caf\xc3\xa9"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("token 195 (position 3 of 5, tokenizer bytes) is outside the vocabulary [0, 128)"),
            std::string::npos)
      << r.err;
}

TEST_F(GenerateTool, BadFlagsExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--temperature", "-1"}, "--temperature must be a number >= 0"},
      {{"--top-p", "0"}, "--top-p must be a number in (0, 1]"},
      {{"--top-p", "1.5"}, "--top-p must be a number in (0, 1]"},
      {{"--top-k", "-2"}, "--top-k must be a non-negative integer"},
      {{"--max-new-tokens", "x"}, "--max-new-tokens must be a non-negative integer"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"--checkpoint", lm_, "--prompt", "a"};
    args.insert(args.end(), flags.begin(), flags.end());
    const ToolRun r = run_generate(args);
    EXPECT_EQ(r.exit_code, 2) << flags[0];
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  const ToolRun empty = run_generate({"--checkpoint", lm_, "--prompt", ""});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--prompt must not be empty"), std::string::npos) << empty.err;
  EXPECT_EQ(run_generate({"--prompt", "a"}).exit_code, 2);
}

}  // namespace
}  // namespace mirror::train
