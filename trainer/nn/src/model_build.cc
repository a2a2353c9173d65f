// model_build.cc — mirror/nn/model_build.h: model values to models, and the layer table.
#include "mirror/nn/model_build.h"

#include <cstdio>

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"

namespace mirror::nn {

std::unique_ptr<Model> build_model(std::string_view model, const Shape& input_sample_shape, std::int64_t num_classes,
                                   Device device) {
  if (model.rfind("mlp:", 0) == 0 || model == "mlp")
    return std::make_unique<Model>(model, input_sample_shape, num_classes, device);
  return build_model(resolve_model_description(model), input_sample_shape, num_classes, device);
}

std::unique_ptr<Model> build_model(const ModelDescription& description, const Shape& input_sample_shape,
                                   std::int64_t num_classes, Device device) {
  MIRROR_CHECK(num_classes >= 2, kInvalidArgument, "model needs at least 2 classes, got " << num_classes);
  Shape shape = model_sample_shape(input_sample_shape);
  std::vector<NamedLayer> layers;
  for (const LayerDescription& d : description.layers) {
    auto layer = make_layer(d, shape, device, num_classes);
    shape = layer->output_sample_shape(shape);
    layers.push_back({d.name, std::move(layer)});
  }
  return std::make_unique<Model>(std::move(layers), input_sample_shape, num_classes, device, description.to_json(-1));
}

std::string layer_table(const Model& model) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof(line), "  %-34s %-18s %12s\n", "layer", "output shape", "params");
  out += line;
  std::snprintf(line, sizeof(line), "  %-34s %-18s %12s\n", "input", to_string(model.input_sample_shape()).c_str(), "");
  out += line;
  std::int64_t total = 0;
  for (std::size_t l = 0; l < model.num_layers(); ++l) {
    std::int64_t params = 0;
    for (const ParamSpec& p : model.layer(l).parameter_specs()) params += shape_numel(p.shape);
    total += params;
    const std::string name = model.layer_name(l) + " (" + model.layer(l).kind() + ")";
    std::snprintf(line, sizeof(line), "  %-34s %-18s %12lld\n", name.c_str(),
                  to_string(model.layer_output_shape(l)).c_str(), static_cast<long long>(params));
    out += line;
    for (const SubLayerRow& row : model.layer(l).sublayer_rows()) {  // counted in the block's row already
      const std::string inner = std::string(static_cast<std::size_t>(2 * row.depth), ' ') + row.name + " (" + row.kind + ")";
      std::snprintf(line, sizeof(line), "  %-34s %-18s %12lld\n", inner.c_str(), to_string(row.output).c_str(),
                    static_cast<long long>(row.params));
      out += line;
    }
  }
  std::snprintf(line, sizeof(line), "  total: %lld parameters (%lld KiB), %lld buffer values\n",
                static_cast<long long>(total), static_cast<long long>(total * 4 / 1024),
                static_cast<long long>(model.num_buffer_values()));
  out += line;
  return out;
}

}  // namespace mirror::nn
