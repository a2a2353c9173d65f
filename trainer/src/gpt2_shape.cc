// gpt2_shape.cc — mirror/train/gpt2_shape.h: the GPT-2 description for given sizes (nn::gpt_model, the gpt-*
// built-ins' builder), and a model
// description compared with it layer by layer after both are normalised (defaults filled in, "classes" made the
// class count, initialisation settings dropped: they do not change what a trained model computes).
#include "mirror/train/gpt2_shape.h"

#include <cmath>
#include <vector>

#include "mirror/error.h"

namespace mirror::train {
namespace {

using Json = nlohmann::ordered_json;

// One layer as compared: its inputs spelled out (the previous layer, or "input", when it names none) and its
// settings with defaults filled in, "classes" replaced and the initialisation settings left out.
struct Normalised {
  std::string type, name, tied_to;
  std::vector<std::string> inputs;
  nlohmann::json settings;
};

std::vector<Normalised> normalise(const nn::ModelDescription& d, std::int64_t num_classes) {
  std::vector<Normalised> out;
  for (std::size_t i = 0; i < d.layers.size(); ++i) {
    const nn::LayerDescription& l = d.layers[i];
    Normalised n{l.type, l.name, l.tied_to, l.inputs, nlohmann::json::object()};
    if (n.inputs.empty()) n.inputs = {i == 0 ? std::string(nn::kModelInputName) : d.layers[i - 1].name};
    for (const auto& [key, value] : l.settings.items())  // (ordered_json to json through its text)
      if (key != "init_std" && key != "proj_init_std")
        n.settings[key] = value == "classes" ? nlohmann::json(num_classes) : nlohmann::json::parse(value.dump());
    if (l.type == "linear" && !n.settings.contains("bias")) n.settings["bias"] = true;
    if (l.type == "layernorm" && !n.settings.contains("eps")) n.settings["eps"] = 1e-5;
    if (!l.body.empty() || !l.shortcut.empty()) n.type += " block";
    out.push_back(std::move(n));
  }
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return "[" + s + "]";
}

// The first difference between layer i of the model and of GPT-2, or "".
std::string layer_difference(std::size_t i, const Normalised& m, const Normalised& g) {
  const std::string at = "layer " + std::to_string(i + 1) + " ('" + m.name + "')";
  if (m.type != g.type || m.name != g.name) return at + " is " + m.type + " where GPT-2 has " + g.type + " '" + g.name + "'";
  if (m.inputs != g.inputs) return at + " takes " + joined(m.inputs) + " where GPT-2's takes " + joined(g.inputs);
  if (m.tied_to != g.tied_to)
    return at + " is tied to '" + m.tied_to + "' where GPT-2's is tied to '" + g.tied_to + "' ('' = its own parameters)";
  if (m.settings != g.settings) return at + " has settings " + m.settings.dump() + " where GPT-2's has " + g.settings.dump();
  return "";
}

// The sizes the model would have as GPT-2, read from its layers (1 where a layer is missing: the comparison then
// names what does not fit).
Gpt2Shape sizes_of(const nn::ModelDescription& d, std::int64_t num_classes) {
  Gpt2Shape g{0, 1, 1, 1, num_classes};
  auto number = [&](const nn::LayerDescription& l, const char* key, std::int64_t fallback) {
    const Json& v = l.settings.value(key, Json());
    return v.is_number_integer() ? v.get<std::int64_t>() : fallback;
  };
  bool attention_seen = false, position_seen = false;
  for (const nn::LayerDescription& l : d.layers) {
    if (l.type == "causal_self_attention") {
      if (!attention_seen) g.heads = number(l, "heads", 1);
      attention_seen = true;
      ++g.layers;
    }
    if (l.type == "position_embedding" && !position_seen) g.context = number(l, "context", 1);
    position_seen = position_seen || l.type == "position_embedding";
  }
  if (!d.layers.empty() && d.layers.front().type == "embedding") {
    g.channels = number(d.layers.front(), "channels", 1);
    g.vocab = number(d.layers.front(), "vocab", num_classes);
  }
  g.layers = std::max<std::int64_t>(g.layers, 1);
  return g;
}

}  // namespace

nn::ModelDescription gpt2_description(const Gpt2Shape& g) {
  return nn::gpt_model({g.layers, g.heads, g.channels, g.context, g.vocab});
}

Gpt2Shape check_gpt2_shaped(const std::string& model_description, std::int64_t num_classes) {
  const nn::ModelDescription d = nn::resolve_model_description(model_description);
  const Gpt2Shape g = sizes_of(d, num_classes);
  const std::vector<Normalised> model = normalise(d, num_classes);
  const std::vector<Normalised> gpt2 = normalise(gpt2_description(g), num_classes);
  std::string difference;
  for (std::size_t i = 0; difference.empty() && i < std::min(model.size(), gpt2.size()); ++i)
    difference = layer_difference(i, model[i], gpt2[i]);
  if (difference.empty() && model.size() != gpt2.size())
    difference = "the model has " + std::to_string(model.size()) + " layers where GPT-2 of " +
                 std::to_string(g.layers) + " blocks has " + std::to_string(gpt2.size());
  if (difference.empty() && !d.output.empty() && d.output != d.layers.back().name)
    difference = "its output is layer '" + d.output + "' where GPT-2's is the last, 'head'";
  MIRROR_CHECK(difference.empty(), kInvalidArgument,
               "the model is not GPT-2-shaped (the layout of Hugging Face's GPT2LMHeadModel, as the gpt-* built-ins"
                   << (d.layers.empty() || d.layers.front().type != "embedding"
                           ? ""
                           : " with " + std::to_string(g.layers) + " blocks, " + std::to_string(g.heads) + " heads, " +
                                 std::to_string(g.channels) + " channels")
                   << "): " << difference);
  return g;
}

}  // namespace mirror::train
