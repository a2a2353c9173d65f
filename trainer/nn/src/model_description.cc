// model_description.cc — mirror/nn/model_description.h: JSON model files read and written, names filled in,
// and what a --model value names (a file, JSON text or a built-in: builtin_models.cc).
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

std::vector<LayerDescription> parse_list(const Json& list, const std::string& where);

LayerDescription parse_layer(const Json& j, const std::string& where) {
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
    d.body = parse_list(j["body"], where + ".body");
    if (j.contains("shortcut")) d.shortcut = parse_list(j["shortcut"], where + ".shortcut");
  }
  for (const auto& [key, value] : j.items())
    if (key != "type" && key != "name" && key != "body" && key != "shortcut") d.settings[key] = value;
  return d;
}

// Parses a list and names its unnamed layers type + count of that type so far ("conv2d1", "relu2").
std::vector<LayerDescription> parse_list(const Json& list, const std::string& where) {
  std::vector<LayerDescription> out;
  std::map<std::string, int> count;
  for (std::size_t i = 0; i < list.size(); ++i) {
    LayerDescription d = parse_layer(list[i], where + "[" + std::to_string(i) + "]");
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
  for (const auto& [key, value] : d.settings.items()) j[key] = value;
  if (d.type == "residual") {
    j["body"] = list_json(d.body);
    j["shortcut"] = list_json(d.shortcut);
  }
  return j;
}

}  // namespace

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
    MIRROR_CHECK(key == "layers", kInvalidArgument, where << ": unknown top-level key \"" << key << "\" (only \"layers\")");
  ModelDescription m;
  m.layers = parse_list(j["layers"], std::string(where) + ": layers");
  return m;
}

std::string ModelDescription::to_json(int indent) const {
  Json j;
  j["layers"] = list_json(layers);
  return j.dump(indent);
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
