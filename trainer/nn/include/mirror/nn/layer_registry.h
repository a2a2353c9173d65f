// mirror/nn/layer_registry.h — the one table of layer types: {type name -> factory(settings, input sample
// shape, device)}. A new layer is its own file plus one row in layer_table.cc; model files, built-ins and
// checkpoints all build layers through it. LayerSettings reads a layer's JSON settings with errors that name
// the layer, and refuses settings the layer does not know (a typo is an error, not a default).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/layer.h"
#include "mirror/nn/model_description.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

// Typed access to one layer's settings; every getter names the layer and the key in its errors.
class LayerSettings {
 public:
  LayerSettings(const LayerDescription& layer, std::string where);
  // An integer >= min (or absent: fallback).
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min = 0) const;
  std::int64_t required_integer(const std::string& key, std::int64_t min = 0) const;
  // An integer n or a pair [a, b] (kernel, stride, padding): {n, n} or {a, b}.
  std::pair<std::int64_t, std::int64_t> pair(const std::string& key, std::pair<std::int64_t, std::int64_t> fallback,
                                             std::int64_t min = 0) const;
  bool boolean(const std::string& key, bool fallback) const;
  double number(const std::string& key, double fallback) const;
  // The string value of `key` when it is a string (e.g. "classes"), else "".
  std::string text(const std::string& key) const;
  bool has(const std::string& key) const;
  // Throws naming the first setting no getter asked for, and the known ones.
  void check_all_used() const;
  const std::string& where() const { return where_; }

 private:
  const nlohmann::ordered_json& value(const std::string& key) const;
  const LayerDescription& layer_;
  std::string where_;  // "layer 'conv1' (conv2d)"
  mutable std::set<std::string> used_;
};

// What a factory gets.
struct LayerArgs {
  const LayerDescription& description;
  const LayerSettings& settings;
  Shape input;              // one sample of the (first) input, e.g. {1, 28, 28}
  Device device;
  std::int64_t classes = 0; // the model's class count ("out_features": "classes")
  std::vector<Shape> inputs = {};  // one sample of every input (a merge has several); inputs[0] == input
  bool fusion = true;              // a layer of layers (residual) fuses its chains (chain_fusion.h)
};

using LayerFactory = std::unique_ptr<Layer> (*)(const LayerArgs& args);

struct LayerType {
  const char* name;        // "linear"
  LayerFactory factory;    // nullptr: a type of the model vocabulary that this build does not have yet
  const char* summary;     // one line for docs and errors
};

// Every row of the table, in its order.
const std::vector<LayerType>& layer_types();
// The row of `type`, or nullptr.
const LayerType* find_layer_type(std::string_view type);

// Builds `layer` for samples of `inputs` (one shape per input): its settings checked, the input shapes checked
// by the layer (the error names the layer, its type and the shapes that do not fit). `prefix` ("block1.body.")
// qualifies the name in errors of nested layers. Throws kInvalidArgument.
std::unique_ptr<Layer> make_layer(const LayerDescription& layer, std::span<const Shape> inputs, Device device,
                                  std::int64_t classes, const std::string& prefix = "", bool fusion = true);
// A layer of one input.
std::unique_ptr<Layer> make_layer(const LayerDescription& layer, const Shape& input, Device device,
                                  std::int64_t classes, const std::string& prefix = "", bool fusion = true);

}  // namespace mirror::nn
