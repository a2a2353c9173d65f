// test_interchange.cc — the safetensors reader and writer (mirror/train/safetensors.h) on hand-made bytes: the
// layout written, F16 and BF16 widened to known float32 values, every malformed layout refused by kind and
// name; and the GPT-2 shape (mirror/train/gpt2_shape.h): its description equals the gpt2-small built-in, and
// models that are not GPT-2-shaped are refused naming the layer. The programs: tests/trainer/interchange.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "mirror/error.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/model_description.h"
#include "mirror/train/gpt2_shape.h"
#include "mirror/train/model_interchange.h"
#include "mirror/train/safetensors.h"

namespace fs = std::filesystem;
using namespace mirror::train;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("mirror_test_st_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A safetensors file from a header text and raw data; `length` overrides the header length field.
std::string raw_file(const fs::path& dir, const std::string& header, const std::string& data,
                     std::uint64_t length = std::numeric_limits<std::uint64_t>::max()) {
  const std::string path = (dir / "t.safetensors").string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t n = length == std::numeric_limits<std::uint64_t>::max() ? header.size() : length;
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
  return path;
}

std::string u16_bytes(std::initializer_list<std::uint16_t> values) {
  std::string s;
  for (std::uint16_t v : values) {
    s.push_back(static_cast<char>(v & 0xff));
    s.push_back(static_cast<char>(v >> 8));
  }
  return s;
}

// The read error's message (kFormat expected), or "" when it reads.
std::string read_error(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const mirror::Error& e) {
    EXPECT_EQ(e.kind(), mirror::ErrorKind::kFormat) << e.what();
    return e.message();
  }
  return "";
}

TEST(Safetensors, WritesTheLayoutAndReadsItBack) {
  const fs::path dir = fresh_dir("roundtrip");
  const std::string path = (dir / "m.safetensors").string();
  const std::vector<NamedTensor> tensors = {{"b", {2, 3}, {1, 2, 3, 4, 5, -6.5f}}, {"a", {1}, {0.25f}}, {"e", {0}, {}}};
  write_safetensors(path, tensors, {{"format", "pt"}});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 7 * 4);
  float first = 0;
  std::memcpy(&first, bytes.data() + 8 + n + 5 * 4, 4);
  EXPECT_EQ(first, -6.5f);  // "b" first, in the given order
  const SafetensorsContent c = read_safetensors(path);
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].name, "b");
  EXPECT_EQ(c.tensors[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(c.tensors[0].values, tensors[0].values);
  EXPECT_EQ(c.tensors[1].values, tensors[1].values);
  EXPECT_EQ(c.metadata.at("format"), "pt");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporary left
}

TEST(Safetensors, WidensF16AndBF16) {
  const fs::path dir = fresh_dir("widen");
  const std::string header =
      R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]}})";
  const std::string path = raw_file(dir, header, u16_bytes({0x3C00, 0xC000, 0x0001, 0x7C00, 0x3F80, 0x4049, 0xC2F7}));
  const SafetensorsContent c = read_safetensors(path);
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].values, (std::vector<float>{1.0f, -2.0f, 5.9604644775390625e-8f, INFINITY}));
  EXPECT_EQ(c.tensors[1].values, (std::vector<float>{1.0f, 3.140625f, -123.5f}));
}

TEST(Safetensors, RefusesMalformedFilesNamingTheTensor) {
  const fs::path dir = fresh_dir("bad");
  const std::string two = std::string(8, '\0');  // 8 data bytes
  auto entry = [](const char* name, const char* dtype, const char* shape, int b, int e) {
    return "\"" + std::string(name) + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
           std::to_string(b) + "," + std::to_string(e) + "]}";
  };
  std::ofstream(dir / "short.safetensors") << "abc";
  EXPECT_NE(read_error((dir / "short.safetensors").string()).find("shorter than the 8-byte"), std::string::npos);
  const std::string good = "{" + entry("x", "F32", "[1]", 0, 4) + "," + entry("y", "F32", "[1]", 4, 8) + "}";
  EXPECT_EQ(read_error(raw_file(dir, good, two)), "");
  EXPECT_NE(read_error(raw_file(dir, good, two, 1000)).find("reaches past the end"), std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "[1,2]", "")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "{\"x\":", "")).find("not a JSON object"), std::string::npos);
  const auto with = [&](const std::string& a, const std::string& b) { return "{" + a + "," + b + "}"; };
  EXPECT_NE(read_error(raw_file(dir, with(entry("x", "F32", "[1]", 0, 4), entry("y", "F32", "[1]", 2, 6)), two))
                .find("tensor 'y' (bytes [2, 6)) overlaps tensor 'x'"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, with(entry("x", "F32", "[1]", 0, 4), entry("y", "F32", "[1]", 8, 12)), two))
                .find("tensor 'y' (bytes [8, 12)) lies past the end of the data"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "{" + entry("y", "F32", "[1]", 4, 8) + "}", two)).find("a gap of bytes [0, 4)"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "{" + entry("x", "F32", "[1]", 0, 4) + "}", two)).find("cover 4 of the 8"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, with(entry("x", "F32", "[1]", 0, 4), entry("y", "Q8", "[1]", 4, 8)), two))
                .find("tensor 'y' has dtype 'Q8'"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "{" + entry("x", "F16", "[3]", 0, 8) + "}", two)).find("tensor 'x'"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, with(entry("x", "F32", "[1]", 0, 4), entry("x", "F32", "[1]", 4, 8)), two))
                .find("names tensor 'x' more than once"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, with(entry("x", "F32", "[1]", 0, 4), entry("y", "F32", "[1]", 8, 4)), two))
                .find("tensor 'y'"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, with(entry("x", "F32", "[1]", 0, 4), entry("y", "F32", "[1]", 8, 4)), two))
                .find("data_offsets [8, 4] end before they begin"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "{" + entry("x", "F32", "[-2]", 0, 8) + "}", two)).find("tensor 'x'"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, "{" + entry("x", "F32", "[-2]", 0, 8) + "}", two))
                .find("holds something other than a size"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", two))
                .find("is not [begin, end] of two byte offsets"),
            std::string::npos);
  EXPECT_NE(read_error(raw_file(dir, R"({"x":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", two)).find("'x'"),
            std::string::npos);
}

TEST(Safetensors, WriteRefusesDuplicatesAndLeavesNothing) {
  const fs::path dir = fresh_dir("dup");
  EXPECT_THROW(write_safetensors((dir / "m.safetensors").string(), {{"a", {1}, {1}}, {"a", {1}, {2}}}), mirror::Error);
  EXPECT_THROW(write_safetensors((dir / "m.safetensors").string(), {{"a", {2}, {1}}}), mirror::Error);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Gpt2Shape, DescriptionIsTheGpt2SmallBuiltin) {
  EXPECT_EQ(gpt2_description({12, 12, 768, 1024, 50257}).to_json(),
            mirror::nn::builtin_model("gpt2-small").to_json());
  const Gpt2Shape g = check_gpt2_shaped(mirror::nn::builtin_model("gpt-nano").to_json(), 65);
  EXPECT_EQ(g.layers, 4);
  EXPECT_EQ(g.heads, 4);
  EXPECT_EQ(g.channels, 128);
  EXPECT_EQ(g.context, 64);
  EXPECT_EQ(g.vocab, 65);
}

std::string shape_error(const std::string& description) {
  try {
    check_gpt2_shaped(description, 10);
  } catch (const mirror::Error& e) {
    return e.message();
  }
  return "";
}

TEST(Gpt2Shape, RefusesOtherModelsNamingTheLayer) {
  EXPECT_NE(shape_error("mlp:16").find("layer 1 ('fc1') is linear where GPT-2 has embedding 'wte'"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(mirror::nn::builtin_model("gpt-nano").to_json());
  j["layers"][6]["bias"] = false;  // h0_fc without a bias
  EXPECT_NE(shape_error(j.dump()).find("layer 7 ('h0_fc') has settings"), std::string::npos);
  j = nlohmann::json::parse(mirror::nn::builtin_model("gpt-nano").to_json());
  j["layers"].erase(j["layers"].size() - 1);  // no head
  EXPECT_NE(shape_error(j.dump()).find("the model has 35 layers where GPT-2 of 4 blocks has 36"), std::string::npos)
      << shape_error(j.dump());
  j = nlohmann::json::parse(mirror::nn::builtin_model("gpt-nano").to_json());
  j["layers"][4]["inputs"] = {"h0_ln1", "h0_attn"};  // the residual from the LayerNorm, not the stream
  EXPECT_NE(shape_error(j.dump()).find("layer 5 ('h0_add1') takes [h0_ln1, h0_attn] where GPT-2's takes [wpe, h0_attn]"),
            std::string::npos);
}

// A checkpoint of mlp:5 for samples of 3 values and 2 classes, with a tokenizer of two files (as a language
// model's would carry them; the export does not look at what they hold).
CheckpointState mlp_state() {
  const auto model = mirror::nn::build_model("mlp:5", mirror::nn::Shape{3}, 2, mirror::nn::Device{});
  model->init_parameters(9);
  const std::vector<float> flat = model->params_to_host();
  CheckpointState s;
  s.step = 7;
  s.model_spec = s.model_description = "mlp:5";
  s.sample_shape = {3};
  s.input_features = 3;
  s.num_classes = 2;
  s.tokenizer = "made-up";
  s.tokenizer_files = {{"model", std::string("\0\x01binary\xff", 9)}, {"vocab.json", "{}"}};
  for (const auto& p : model->parameters())
    s.params.push_back({p.name, std::vector<std::int64_t>(p.shape.begin(), p.shape.end()),
                        std::vector<float>(flat.begin() + p.offset, flat.begin() + p.offset + p.numel)});
  s.optimizer_kind = "sgd";
  return s;
}

TEST(ModelInterchange, SafetensorsRoundTripCarriesTensorsAndTokenizerFiles) {
  const fs::path dir = fresh_dir("export") / "out";
  const CheckpointState s = mlp_state();
  export_model(s, ModelFormat::kSafetensors, dir.string());
  EXPECT_TRUE(fs::exists(dir / "tokenizer" / "model"));
  const CheckpointState back = import_model(dir.string(), ModelFormat::kSafetensors);
  EXPECT_EQ(back.step, 0);
  EXPECT_TRUE(back.optimizer_state.empty());
  EXPECT_EQ(back.model_description, "mlp:5");
  EXPECT_EQ(back.sample_shape, s.sample_shape);
  EXPECT_EQ(back.tokenizer, "made-up");
  ASSERT_EQ(back.params.size(), s.params.size());
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    EXPECT_EQ(back.params[i].name, s.params[i].name);
    EXPECT_EQ(back.params[i].values, s.params[i].values);
  }
  ASSERT_EQ(back.tokenizer_files.size(), 2u);
  EXPECT_EQ(back.tokenizer_files[0].bytes, s.tokenizer_files[0].bytes);
  EXPECT_EQ(back.tokenizer_files[1].name, "vocab.json");
}

TEST(ModelInterchange, RefusedExportLeavesNothing) {
  const fs::path parent = fresh_dir("refused");
  EXPECT_THROW(export_model(mlp_state(), ModelFormat::kHfGpt2, (parent / "new").string()), mirror::Error);
  EXPECT_FALSE(fs::exists(parent / "new"));
  CheckpointState bad = mlp_state();
  bad.tokenizer_files.push_back({"../escape", "x"});  // refused before anything is written
  EXPECT_THROW(export_model(bad, ModelFormat::kSafetensors, (parent / "new").string()), mirror::Error);
  EXPECT_FALSE(fs::exists(parent / "new"));
  EXPECT_FALSE(fs::exists(parent / "escape"));
  // An existing directory where model.json, the last file, cannot be renamed into place (a non-empty directory
  // of that name): the weights and tokenizer files written before it are removed again, and only what was there stays.
  fs::create_directories(parent / "old" / "model.json" / "x");
  EXPECT_THROW(export_model(mlp_state(), ModelFormat::kSafetensors, (parent / "old").string()), mirror::Error);
  EXPECT_FALSE(fs::exists(parent / "old" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(parent / "old" / "tokenizer"));
  EXPECT_TRUE(fs::exists(parent / "old" / "model.json" / "x"));
}

}  // namespace
