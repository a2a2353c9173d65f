// builtin_models.cc — the built-in models as model descriptions (the same vocabulary as JSON model files):
// keras-cnn (TensorFlow's MirroredStrategy tutorial), cnn-bn, resnet20 (CIFAR-style ResNet-20, He et al.
// 2016), mlp:H1,H2,..., and the GPT-2-shaped language models gpt-nano, gpt-mini and gpt2-small. Each is
// written here as the JSON a user would write.
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "mirror/error.h"
#include "mirror/nn/model_description.h"

namespace mirror::nn {
namespace {

using Json = nlohmann::ordered_json;

Json conv(const std::string& name, int out, int kernel, int stride, int padding, bool bias) {
  return {{"type", "conv2d"}, {"name", name},       {"out_channels", out}, {"kernel", kernel},
          {"stride", stride}, {"padding", padding}, {"bias", bias}};
}
Json layer(const std::string& type, const std::string& name) { return {{"type", type}, {"name", name}}; }
Json pool(const std::string& name) { return {{"type", "maxpool2d"}, {"name", name}, {"kernel", 2}, {"stride", 2}}; }
Json linear(const std::string& name, Json out) { return {{"type", "linear"}, {"name", name}, {"out_features", out}}; }

Json keras_cnn() {
  return {{"layers",
           {conv("conv1", 32, 3, 1, 0, true), layer("relu", "relu1"), pool("pool1"), layer("flatten", "flatten"),
            linear("fc1", 64), layer("relu", "relu2"), linear("fc2", "classes")}}};
}

Json cnn_bn() {
  return {{"layers",
           {conv("conv1", 32, 3, 1, 1, false), layer("batchnorm2d", "bn1"), layer("relu", "relu1"), pool("pool1"),
            conv("conv2", 64, 3, 1, 1, false), layer("batchnorm2d", "bn2"), layer("relu", "relu2"), pool("pool2"),
            layer("flatten", "flatten"), linear("fc1", 128), layer("relu", "relu3"),
            {{"type", "dropout"}, {"name", "dropout"}, {"p", 0.25}}, linear("fc2", "classes")}}};
}

// A basic block: conv3x3 (stride) BN ReLU conv3x3 BN, plus the identity or a 1x1 conv + BN projection,
// then ReLU after the sum.
void basic_block(Json& layers, const std::string& name, int channels, int stride, bool project) {
  Json body = {conv("conv1", channels, 3, stride, 1, false), layer("batchnorm2d", "bn1"), layer("relu", "relu1"),
               conv("conv2", channels, 3, 1, 1, false), layer("batchnorm2d", "bn2")};
  Json shortcut = Json::array();
  if (project) shortcut = {conv("conv", channels, 1, stride, 0, false), layer("batchnorm2d", "bn")};
  layers.push_back({{"type", "residual"}, {"name", name}, {"body", body}, {"shortcut", shortcut}});
  layers.push_back(layer("relu", name + "_relu"));
}

Json resnet20() {
  Json layers = {conv("conv1", 16, 3, 1, 1, false), layer("batchnorm2d", "bn1"), layer("relu", "relu1")};
  const int channels[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage)
    for (int block = 0; block < 3; ++block)
      basic_block(layers, "stage" + std::to_string(stage + 1) + "_block" + std::to_string(block + 1), channels[stage],
                  stage > 0 && block == 0 ? 2 : 1, stage > 0 && block == 0);
  layers.push_back(layer("global_avgpool", "pool"));
  layers.push_back(layer("flatten", "flatten"));
  layers.push_back(linear("fc", "classes"));
  return {{"layers", layers}};
}


// A pre-LayerNorm GPT-2 (Radford et al. 2019; the layout of Hugging Face's GPT2LMHeadModel): token and
// position embeddings, `layers` blocks of x + attn(ln_1(x)) and x + mlp(ln_2(x)) with mlp = Linear C->4C,
// GELU, Linear 4C->C, then ln_f and a head tied to the token embedding. Initialised as GPT-2: weights
// N(0, 0.02), the two residual projections of each block N(0, 0.02/sqrt(2L)), biases 0, LayerNorm 1 and 0.
void gpt_block(Json& layers, const std::string& p, const GptSizes& g, double residual_std) {
  layers.push_back(layer("layernorm", p + "_ln1"));
  layers.push_back({{"type", "causal_self_attention"}, {"name", p + "_attn"}, {"heads", g.heads},
                    {"init_std", 0.02}, {"proj_init_std", residual_std}});
  const std::string residual_in = layers[layers.size() - 3]["name"];
  layers.push_back({{"type", "add"}, {"name", p + "_add1"}, {"inputs", {residual_in, p + "_attn"}}});
  layers.push_back(layer("layernorm", p + "_ln2"));
  layers.push_back({{"type", "linear"}, {"name", p + "_fc"}, {"out_features", 4 * g.channels}, {"init_std", 0.02}});
  layers.push_back(layer("gelu", p + "_gelu"));
  layers.push_back({{"type", "linear"}, {"name", p + "_proj"}, {"out_features", g.channels},
                    {"init_std", residual_std}});
  layers.push_back({{"type", "add"}, {"name", p + "_add2"}, {"inputs", {p + "_add1", p + "_proj"}}});
}

Json gpt(const GptSizes& g) {
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(g.layers));
  const Json vocab = g.vocab > 0 ? Json(g.vocab) : Json("classes");
  Json layers = {{{"type", "embedding"}, {"name", "wte"}, {"vocab", vocab}, {"channels", g.channels},
                  {"init_std", 0.02}},
                 {{"type", "position_embedding"}, {"name", "wpe"}, {"context", g.context}, {"init_std", 0.02}}};
  for (std::int64_t l = 0; l < g.layers; ++l) {
    std::string prefix = "h";  // (not "h" + ...: GCC 12's -Wrestrict false positive)
    prefix += std::to_string(l);
    gpt_block(layers, prefix, g, residual_std);
  }
  layers.push_back(layer("layernorm", "ln_f"));
  layers.push_back({{"type", "linear"}, {"name", "head"}, {"out_features", vocab}, {"bias", false},
                    {"tied_to", "wte"}});
  return {{"layers", layers}};
}

// The hidden sizes of "mlp:H1,H2,...", each in [1, 2^24]; errors name the text and what is expected.
std::vector<std::int64_t> mlp_hidden_sizes(std::string_view text) {
  constexpr std::string_view kExpected = "expected mlp:H1,H2,... with hidden sizes in [1, 16777216], e.g. mlp:512,256";
  const auto colon = text.find(':');
  MIRROR_CHECK(colon != std::string_view::npos && colon + 1 < text.size(), kInvalidArgument,
               "model '" << text << "': no hidden sizes (" << kExpected << ")");
  std::vector<std::int64_t> hidden;
  std::string_view rest = text.substr(colon + 1);
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    MIRROR_CHECK(!item.empty() && ec == std::errc() && end == item.data() + item.size(), kInvalidArgument,
                 "model '" << text << "': hidden size '" << item << "' is not a whole number (" << kExpected << ")");
    MIRROR_CHECK(value >= 1 && value <= (1 << 24), kInvalidArgument,
                 "model '" << text << "': hidden size " << value << " out of range (" << kExpected << ")");
    hidden.push_back(value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return hidden;
}

Json mlp(const std::vector<std::int64_t>& hidden) {
  Json layers = Json::array();
  int i = 1;
  for (std::int64_t h : hidden) {
    layers.push_back(linear("fc" + std::to_string(i), h));
    layers.push_back(layer("relu", "relu" + std::to_string(i)));
    ++i;
  }
  layers.push_back(linear("fc" + std::to_string(i), "classes"));
  return {{"layers", layers}};
}

bool names_mlp(std::string_view name) { return name.rfind("mlp:", 0) == 0 || name == "mlp"; }

}  // namespace

const std::vector<BuiltinModel>& builtin_models() {
  static const std::vector<BuiltinModel> models = {
      {"mlp:H1,H2,...", "Linear + ReLU per hidden size, then Linear to the classes (e.g. mlp:512,256)"},
      {"keras-cnn", "the MirroredStrategy tutorial's CNN: Conv 32 3x3, ReLU, MaxPool 2, Flatten, Linear 64, ReLU, Linear"},
      {"cnn-bn", "2 x (Conv 3x3 pad 1 + BatchNorm + ReLU + MaxPool 2) with 32/64 channels, Linear 128, Dropout 0.25, Linear"},
      {"resnet20", "CIFAR-style ResNet-20: 3 stages of 3 basic blocks (16/32/64 channels), global average pool, Linear"},
      {"gpt-nano", "GPT-2-shaped language model: 4 layers, 4 heads, 128 channels, context 64, the dataset's vocabulary"},
      {"gpt-mini", "GPT-2-shaped language model: 6 layers, 6 heads, 384 channels, context 256, the dataset's vocabulary"},
      {"gpt2-small", "GPT-2's 124M: 12 layers, 12 heads, 768 channels, context 1024, vocabulary 50257"},
  };
  return models;
}

ModelDescription builtin_model(std::string_view name) {
  const std::string n(name);
  Json j;
  if (names_mlp(n)) j = mlp(mlp_hidden_sizes(n));
  else if (n == "keras-cnn") j = keras_cnn();
  else if (n == "cnn-bn") j = cnn_bn();
  else if (n == "resnet20") j = resnet20();
  else if (n == "gpt-nano") j = gpt({4, 4, 128, 64, 0});
  else if (n == "gpt-mini") j = gpt({6, 6, 384, 256, 0});
  else if (n == "gpt2-small") j = gpt({12, 12, 768, 1024, 50257});
  if (j.is_null()) {
    std::string names;
    for (const BuiltinModel& m : builtin_models()) names += (names.empty() ? "" : ", ") + std::string(m.name);
    MIRROR_THROW(kInvalidArgument, "model '" << n << "' is neither a file nor a built-in model (" << names << ")");
  }
  return ModelDescription::parse(j.dump(), "built-in model " + n);
}

ModelDescription gpt_model(const GptSizes& sizes) {
  return ModelDescription::parse(gpt(sizes).dump(), "GPT-2 description");
}

std::string canonical_mlp_name(std::string_view name) {
  if (!names_mlp(name)) return "";
  std::string out = "mlp:";
  const std::vector<std::int64_t> hidden = mlp_hidden_sizes(name);
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(hidden[i]);
  }
  return out;
}

}  // namespace mirror::nn
