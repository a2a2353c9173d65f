// model_description.cc — mirror/nn/model_description.h: JSON model files read and written, names filled in,
// the graph's wiring checked (inputs, output, tied layers), and what a --model value names (a file, JSON text
// or a built-in: builtin_models.cc).
#include "mirror/nn/model_description.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"

namespace mirror::nn {
namespace {

using Json = nlohmann::ordered_json;

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::vector<LayerDescription> parse_list(const Json& list, const std::string& where, bool top_level);

// "inputs": a non-empty list of names; "tied_to": a name. Both only at the top level (the graph's nodes).
void parse_wiring(const Json& j, const std::string& where, bool top_level, LayerDescription& d) {
  for (const char* key : {"inputs", "tied_to"})
    MIRROR_CHECK(!j.contains(key) || top_level, kInvalidArgument,
                 where << ": \"" << key << "\" is for the model's own layers, not for the layers inside a residual block");
  if (j.contains("inputs")) {
    const Json& inputs = j["inputs"];
    MIRROR_CHECK(inputs.is_array() && !inputs.empty(), kInvalidArgument,
                 where << ": \"inputs\" must be a non-empty list of layer names, got " << inputs.dump());
    for (const Json& name : inputs) {
      MIRROR_CHECK(name.is_string(), kInvalidArgument,
                   where << ": \"inputs\" must list layer names (strings), got " << name.dump());
      d.inputs.push_back(name.get<std::string>());
    }
  }
  if (j.contains("tied_to")) {
    MIRROR_CHECK(j["tied_to"].is_string() && !j["tied_to"].get<std::string>().empty(), kInvalidArgument,
                 where << ": \"tied_to\" must name a layer, got " << j["tied_to"].dump());
    d.tied_to = j["tied_to"].get<std::string>();
  }
}

LayerDescription parse_layer(const Json& j, const std::string& where, bool top_level) {
  MIRROR_CHECK(j.is_object(), kInvalidArgument, where << " must be an object {\"type\": ...}, got " << j.dump());
  MIRROR_CHECK(j.contains("type") && j["type"].is_string(), kInvalidArgument,
               where << " has no \"type\" string: " << j.dump());
  LayerDescription d;
  d.type = j["type"].get<std::string>();
  if (!find_layer_type(d.type)) {
    std::string names;
    for (const LayerType& t : layer_types()) names += (names.empty() ? "" : ", ") + std::string(t.name);
    MIRROR_THROW(kInvalidArgument, where << ": unknown layer type \"" << d.type << "\"; known types: " << names);
  }
  if (j.contains("name")) {
    MIRROR_CHECK(j["name"].is_string() && valid_name(j["name"].get<std::string>()), kInvalidArgument,
                 where << ": \"name\" must be 1 to 64 letters, digits, '_' or '-', got " << j["name"].dump());
    d.name = j["name"].get<std::string>();
  }
  const bool residual = d.type == "residual";
  for (const char* branch : {"body", "shortcut"}) {
    if (!j.contains(branch)) continue;
    MIRROR_CHECK(residual, kInvalidArgument, where << " (" << d.type << "): only a residual layer has a \"" << branch << "\"");
    MIRROR_CHECK(j[branch].is_array(), kInvalidArgument, where << ": \"" << branch << "\" must be a list of layers");
  }
  if (residual) {
    MIRROR_CHECK(j.contains("body") && !j["body"].empty(), kInvalidArgument,
                 where << " (residual): \"body\" must list at least one layer");
    d.body = parse_list(j["body"], where + ".body", false);
    if (j.contains("shortcut")) d.shortcut = parse_list(j["shortcut"], where + ".shortcut", false);
  }
  parse_wiring(j, where, top_level, d);
  for (const auto& [key, value] : j.items())
    if (key != "type" && key != "name" && key != "body" && key != "shortcut" && key != "inputs" && key != "tied_to")
      d.settings[key] = value;
  return d;
}

// Parses a list and names its unnamed layers type + count of that type so far ("conv2d1", "relu2").
std::vector<LayerDescription> parse_list(const Json& list, const std::string& where, bool top_level) {
  std::vector<LayerDescription> out;
  std::map<std::string, int> count;
  for (std::size_t i = 0; i < list.size(); ++i) {
    LayerDescription d = parse_layer(list[i], where + "[" + std::to_string(i) + "]", top_level);
    MIRROR_CHECK(!top_level || d.name != kModelInputName, kInvalidArgument,
                 where << "[" << i << "]: the name '" << kModelInputName << "' stands for the model's input; "
                       << "choose another");
    const int n = ++count[d.type];
    if (d.name.empty()) d.name = d.type + std::to_string(n);
    out.push_back(std::move(d));
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      MIRROR_CHECK(out[i].name != out[k].name, kInvalidArgument,
                   where << "[" << i << "]: the name '" << out[i].name << "' is already used by " << where << "[" << k
                         << "]; names must be unique within a list");
  return out;
}

Json layer_json(const LayerDescription& d);

Json list_json(const std::vector<LayerDescription>& list) {
  Json a = Json::array();
  for (const LayerDescription& d : list) a.push_back(layer_json(d));
  return a;
}

Json layer_json(const LayerDescription& d) {
  Json j;
  j["type"] = d.type;
  j["name"] = d.name;
  if (!d.inputs.empty()) j["inputs"] = d.inputs;
  if (!d.tied_to.empty()) j["tied_to"] = d.tied_to;
  for (const auto& [key, value] : d.settings.items()) j[key] = value;
  if (d.type == "residual") {
    j["body"] = list_json(d.body);
    j["shortcut"] = list_json(d.shortcut);
  }
  return j;
}

// The index of layer `name` in `layers`, or -1.
std::ptrdiff_t index_of(const std::vector<LayerDescription>& layers, const std::string& name) {
  for (std::size_t k = 0; k < layers.size(); ++k)
    if (layers[k].name == name) return static_cast<std::ptrdiff_t>(k);
  return -1;
}

// An earlier layer named by layer i's `key` ("inputs", "tied_to"): its index; errors name both layers.
std::size_t earlier_layer(const std::vector<LayerDescription>& layers, std::size_t i, const std::string& name,
                          const char* key, const std::string& where) {
  const std::string at = where + ": layers[" + std::to_string(i) + "] '" + layers[i].name + "'";
  const std::ptrdiff_t k = index_of(layers, name);
  MIRROR_CHECK(k >= 0, kInvalidArgument, at << ": \"" << key << "\" names '" << name << "', which is no layer of the model"
                                            << (std::string(key) == "inputs" ? " (nor \"input\", the model's input)" : ""));
  MIRROR_CHECK(static_cast<std::size_t>(k) < i, kInvalidArgument,
               at << ": \"" << key << "\" names '" << name << "' (layers[" << k << "]), which is not an earlier layer; "
                  << "a layer takes only earlier layers, so the graph has no cycles");
  return static_cast<std::size_t>(k);
}

// Inputs and tied layers name earlier layers, the output names a layer, and every layer's output is used by a
// later layer or is the model's output.
void check_wiring(const ModelDescription& m, const std::string& where) {
  const auto& layers = m.layers;
  const std::size_t out = m.output_index();
  std::vector<bool> used(layers.size(), false);
  used[out] = true;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].inputs.empty() && i > 0) used[i - 1] = true;
    for (const std::string& name : layers[i].inputs)
      if (name != kModelInputName) used[earlier_layer(layers, i, name, "inputs", where)] = true;
    if (!layers[i].tied_to.empty()) earlier_layer(layers, i, layers[i].tied_to, "tied_to", where);
  }
  for (std::size_t i = 0; i < layers.size(); ++i)
    MIRROR_CHECK(used[i], kInvalidArgument,
                 where << ": layers[" << i << "] '" << layers[i].name << "' is unused: no later layer takes its output "
                       << "and it is not the model's output (\"output\": '" << layers[out].name << "')");
}

}  // namespace

std::size_t ModelDescription::output_index() const {
  if (output.empty()) return layers.size() - 1;
  const std::ptrdiff_t k = index_of(layers, output);
  MIRROR_CHECK(k >= 0, kInvalidArgument, "the model's \"output\" names '" << output << "', which is no layer of the model");
  return static_cast<std::size_t>(k);
}

ModelDescription ModelDescription::parse(std::string_view json_text, std::string_view where) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    MIRROR_THROW(kInvalidArgument, where << " is not valid JSON: " << e.what());
  }
  MIRROR_CHECK(j.is_object() && j.contains("layers") && j["layers"].is_array() && !j["layers"].empty(),
               kInvalidArgument, where << ": a model is an object {\"layers\": [...]} with at least one layer");
  for (const auto& [key, value] : j.items())
    MIRROR_CHECK(key == "layers" || key == "output", kInvalidArgument,
                 where << ": unknown top-level key \"" << key << "\" (only \"layers\" and \"output\")");
  ModelDescription m;
  m.layers = parse_list(j["layers"], std::string(where) + ": layers", true);
  if (j.contains("output")) {
    MIRROR_CHECK(j["output"].is_string(), kInvalidArgument, where << ": \"output\" must name a layer, got " << j["output"].dump());
    m.output = j["output"].get<std::string>();
    MIRROR_CHECK(index_of(m.layers, m.output) >= 0, kInvalidArgument,
                 where << ": \"output\" names '" << m.output << "', which is no layer of the model");
  }
  check_wiring(m, std::string(where));
  return m;
}

std::string ModelDescription::to_json(int indent) const {
  Json j;
  j["layers"] = list_json(layers);
  if (!output.empty()) j["output"] = output;
  return j.dump(indent);
}

SequenceShape sequence_shape(const ModelDescription& description) {
  SequenceShape shape;
  const std::vector<LayerDescription>& layers = description.layers;
  if (layers.empty() || layers.front().type != "embedding") return shape;
  shape.takes_tokens = true;
  const Json& vocab = layers.front().settings.value("vocab", Json());
  if (vocab.is_number_integer()) shape.vocab = vocab.get<std::int64_t>();
  for (const LayerDescription& d : layers) {
    if (d.type != "position_embedding") continue;
    const Json& context = d.settings.value("context", Json());
    if (context.is_number_integer()) shape.context = context.get<std::int64_t>();
    break;
  }
  return shape;
}

ModelDescription resolve_model_description(std::string_view model) {
  const std::string text(model);
  MIRROR_CHECK(!text.empty(), kInvalidArgument, "--model is empty; give a built-in name or a JSON model file");
  if (text.front() == '{') return ModelDescription::parse(text, "model description");
  std::error_code ec;
  if (std::filesystem::is_regular_file(text, ec)) {
    std::ifstream f(text);
    std::stringstream buffer;
    buffer << f.rdbuf();
    MIRROR_CHECK(f.good() || f.eof(), kIo, "cannot read model file " << text);
    return ModelDescription::parse(buffer.str(), "model file " + text);
  }
  return builtin_model(text);
}

}  // namespace mirror::nn
