// mirror/nn/model_build.h — from a --model value (or a checkpoint's stored description) to a Model: "mlp:..."
// through ModelSpec (names fc1, relu1, ...; the layout every earlier checkpoint has), anything else through
// its model description and the layer registry, layer by layer, each checked against the shape it gets.
// And the model's layer table, like Keras' model.summary().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mirror/nn/device.h"
#include "mirror/nn/model.h"
#include "mirror/nn/model_description.h"

namespace mirror::nn {

// Throws kInvalidArgument naming the value, or the layer and the shape that does not fit.
std::unique_ptr<Model> build_model(std::string_view model, const Shape& input_sample_shape, std::int64_t num_classes,
                                   Device device);
// description() of the result is the description's compact JSON.
std::unique_ptr<Model> build_model(const ModelDescription& description, const Shape& input_sample_shape,
                                   std::int64_t num_classes, Device device);

// One line per layer: name (type), output shape, parameter count; then the totals. E.g.
//   layer                    output shape        params
//   conv1 (conv2d)           [32, 26, 26]           320
// A block's own layers follow its row, indented, with their own output shapes and parameter counts (the
// block's row counts them already; the total counts each parameter once).
std::string layer_table(const Model& model);

}  // namespace mirror::nn
