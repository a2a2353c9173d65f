// layer_registry.cc — mirror/nn/layer_registry.h: LayerSettings' typed getters and make_layer, which finds a
// type's row (layer_table.cc), runs its factory and checks that the layer takes its input shape.
#include "mirror/nn/layer_registry.h"

#include <sstream>

#include "mirror/error.h"

namespace mirror::nn {
namespace {

const std::set<std::string> kStructuralKeys = {"type", "name", "body", "shortcut"};

}  // namespace

LayerSettings::LayerSettings(const LayerDescription& layer, std::string where) : layer_(layer), where_(std::move(where)) {}

bool LayerSettings::has(const std::string& key) const { return layer_.settings.contains(key); }

const nlohmann::ordered_json& LayerSettings::value(const std::string& key) const {
  used_.insert(key);
  return layer_.settings.at(key);
}

std::int64_t LayerSettings::integer(const std::string& key, std::int64_t fallback, std::int64_t min) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  MIRROR_CHECK(v.is_number_integer(), kInvalidArgument,
               where_ << ": \"" << key << "\" must be a whole number, got " << v.dump());
  const std::int64_t n = v.get<std::int64_t>();
  MIRROR_CHECK(n >= min && n <= (std::int64_t{1} << 24), kInvalidArgument,
               where_ << ": \"" << key << "\" must be from " << min << " to 16777216, got " << n);
  return n;
}

std::int64_t LayerSettings::required_integer(const std::string& key, std::int64_t min) const {
  MIRROR_CHECK(has(key), kInvalidArgument, where_ << ": \"" << key << "\" is required");
  return integer(key, 0, min);
}

std::pair<std::int64_t, std::int64_t> LayerSettings::pair(const std::string& key,
                                                          std::pair<std::int64_t, std::int64_t> fallback,
                                                          std::int64_t min) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  if (v.is_array()) {
    MIRROR_CHECK(v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer(), kInvalidArgument,
                 where_ << ": \"" << key << "\" must be a whole number or a pair [height, width], got " << v.dump());
    const std::int64_t a = v[0].get<std::int64_t>(), b = v[1].get<std::int64_t>();
    MIRROR_CHECK(a >= min && b >= min && a <= 4096 && b <= 4096, kInvalidArgument,
                 where_ << ": \"" << key << "\" values must be from " << min << " to 4096, got " << v.dump());
    return {a, b};
  }
  const std::int64_t n = integer(key, 0, min);
  return {n, n};
}

bool LayerSettings::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  MIRROR_CHECK(v.is_boolean(), kInvalidArgument, where_ << ": \"" << key << "\" must be true or false, got " << v.dump());
  return v.get<bool>();
}

double LayerSettings::number(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  const auto& v = value(key);
  MIRROR_CHECK(v.is_number(), kInvalidArgument, where_ << ": \"" << key << "\" must be a number, got " << v.dump());
  return v.get<double>();
}

std::string LayerSettings::text(const std::string& key) const {
  if (!has(key) || !layer_.settings.at(key).is_string()) return "";
  return value(key).get<std::string>();
}

void LayerSettings::check_all_used() const {
  std::string known;
  for (const std::string& k : used_) known += (known.empty() ? "" : ", ") + k;
  for (const auto& [key, v] : layer_.settings.items()) {
    if (kStructuralKeys.count(key) || used_.count(key)) continue;
    MIRROR_THROW(kInvalidArgument, where_ << ": unknown setting \"" << key << "\""
                                          << (known.empty() ? " (this layer type takes none)"
                                                            : " (settings given and known: " + known + ")")
                                          << "; docs/model-format.md lists each type's settings");
  }
}

const LayerType* find_layer_type(std::string_view type) {
  for (const LayerType& t : layer_types())
    if (type == t.name) return &t;
  return nullptr;
}

std::unique_ptr<Layer> make_layer(const LayerDescription& layer, std::span<const Shape> inputs, Device device,
                                  std::int64_t classes, const std::string& prefix, bool fusion) {
  const std::string where = "layer '" + prefix + layer.name + "' (" + layer.type + ")";
  const LayerType* type = find_layer_type(layer.type);
  if (!type) {
    std::string names;
    for (const LayerType& t : layer_types()) names += (names.empty() ? "" : ", ") + std::string(t.name);
    MIRROR_THROW(kInvalidArgument, where << ": unknown layer type \"" << layer.type << "\"; known types: " << names);
  }
  MIRROR_CHECK(type->factory != nullptr, kInvalidArgument,
               where << ": layer type \"" << layer.type << "\" belongs to Mirror's model vocabulary but this build "
                     << "does not have it yet (" << type->summary << ")");
  MIRROR_CHECK(layer.type == "residual" || (layer.body.empty() && layer.shortcut.empty()), kInvalidArgument,
               where << ": only a residual layer has a body or a shortcut");
  MIRROR_CHECK(!inputs.empty(), kInternal, where << ": built without an input shape");
  LayerSettings settings(layer, where);
  std::unique_ptr<Layer> built;
  std::string shapes;
  for (const Shape& s : inputs) shapes += (shapes.empty() ? "" : " and ") + to_string(s);
  try {
    built = type->factory(
        LayerArgs{layer, settings, inputs[0], device, classes, std::vector<Shape>(inputs.begin(), inputs.end()), fusion});
    settings.check_all_used();
    built->output_sample_shape_of(inputs);  // the layer's own check of its inputs
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidArgument || e.message().rfind("layer '", 0) == 0) throw;
    MIRROR_THROW(kInvalidArgument, where << " with input samples of shape " << shapes << ": " << e.message());
  }
  return built;
}

std::unique_ptr<Layer> make_layer(const LayerDescription& layer, const Shape& input, Device device,
                                  std::int64_t classes, const std::string& prefix, bool fusion) {
  return make_layer(layer, std::span<const Shape>(&input, 1), device, classes, prefix, fusion);
}

}  // namespace mirror::nn
