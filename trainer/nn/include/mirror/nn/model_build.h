// mirror/nn/model_build.h — from a --model value (or a checkpoint's stored description) to a Model: a built-in
// or a JSON model file, through its model description and the layer registry, node by node, each checked
// against the shapes it gets. The graph is built first (build_graph: every check that the input can fail), the
// model's memory given to it after (build_model). And the model's layer table, like Keras' model.summary().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mirror/nn/device.h"
#include "mirror/nn/model.h"
#include "mirror/nn/model_description.h"

namespace mirror::nn {

// Throws kInvalidArgument naming the value, or the layer and the shape that does not fit. The graph's
// description is the value's canonical text for an MLP ("mlp:512,256", the names fc1, relu1, ... every
// checkpoint has), else the description's compact JSON.
// fusion: the fusion pass runs (ModelGraph::fusion; --fusion on|off).
ModelGraph build_graph(std::string_view model, const Shape& input_sample_shape, std::int64_t num_classes,
                       Device device, bool fusion = true);
ModelGraph build_graph(const ModelDescription& description, const Shape& input_sample_shape,
                       std::int64_t num_classes, Device device, bool fusion = true);
// build_graph, then the model with its memory (ModelMemory).
std::unique_ptr<Model> build_model(std::string_view model, const Shape& input_sample_shape, std::int64_t num_classes,
                                   Device device, const ModelMemory& memory = {});
std::unique_ptr<Model> build_model(const ModelDescription& description, const Shape& input_sample_shape,
                                   std::int64_t num_classes, Device device, const ModelMemory& memory = {});

// One line per layer: name (type), output shape, parameter count; then the totals. E.g.
//   layer                    output shape        params
//   conv1 (conv2d)           [32, 26, 26]           320
// A block's own layers follow its row, indented, with their own output shapes and parameter counts (the
// block's row counts them already; the total counts each parameter once).
std::string layer_table(const Model& model);

}  // namespace mirror::nn
