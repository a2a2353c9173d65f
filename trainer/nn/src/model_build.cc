// model_build.cc — mirror/nn/model_build.h: model values to models, and the layer table.
#include "mirror/nn/model_build.h"

#include <cstdio>
#include <filesystem>

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"

namespace mirror::nn {

ModelGraph build_graph(std::string_view model, const Shape& input_sample_shape, std::int64_t num_classes,
                       Device device, bool fusion) {
  ModelGraph graph = build_graph(resolve_model_description(model), input_sample_shape, num_classes, device, fusion);
  std::error_code ec;
  const std::string mlp = canonical_mlp_name(model);
  if (!mlp.empty() && !std::filesystem::is_regular_file(std::string(model), ec)) graph.description = mlp;
  return graph;
}

ModelGraph build_graph(const ModelDescription& description, const Shape& input_sample_shape,
                       std::int64_t num_classes, Device device, bool fusion) {
  MIRROR_CHECK(num_classes >= 2, kInvalidArgument, "model needs at least 2 classes, got " << num_classes);
  const Shape input = model_sample_shape(input_sample_shape);
  ModelGraph graph{{}, description.output_index(), input_sample_shape, num_classes, device, description.to_json(-1),
                   fusion};
  std::vector<GraphNode>& nodes = graph.nodes;
  std::vector<Shape> outputs;
  auto index_of = [&](const std::string& name) {
    for (std::size_t k = 0; k < nodes.size(); ++k)
      if (nodes[k].name == name) return static_cast<std::ptrdiff_t>(k);
    MIRROR_THROW(kInvalidArgument, "model: '" << name << "' is not an earlier layer");  // parse() checked this
  };
  for (const LayerDescription& d : description.layers) {
    GraphNode node{d.name, nullptr};
    for (const std::string& name : d.inputs)
      node.inputs.push_back(name == kModelInputName ? GraphNode::kModelInput : index_of(name));
    std::vector<Shape> shapes;
    if (node.inputs.empty()) shapes.push_back(outputs.empty() ? input : outputs.back());
    for (std::ptrdiff_t i : node.inputs) shapes.push_back(i == GraphNode::kModelInput ? input : outputs[i]);
    if (!d.tied_to.empty()) node.tied_to = index_of(d.tied_to);
    node.layer = make_layer(d, shapes, device, num_classes, "", fusion);
    outputs.push_back(node.layer->output_sample_shape_of(shapes));
    nodes.push_back(std::move(node));
  }
  return graph;
}

std::unique_ptr<Model> build_model(std::string_view model, const Shape& input_sample_shape, std::int64_t num_classes,
                                   Device device, const ModelMemory& memory) {
  return std::make_unique<Model>(build_graph(model, input_sample_shape, num_classes, device), memory);
}

std::unique_ptr<Model> build_model(const ModelDescription& description, const Shape& input_sample_shape,
                                   std::int64_t num_classes, Device device, const ModelMemory& memory) {
  return std::make_unique<Model>(build_graph(description, input_sample_shape, num_classes, device), memory);
}

namespace {

// "  <- a, b" where layer l takes other inputs than the previous layer's output; "  tied to wte" likewise.
std::string wiring_note(const Model& model, std::size_t l) {
  std::string note;
  const auto& inputs = model.layer_inputs(l);
  const std::ptrdiff_t previous = static_cast<std::ptrdiff_t>(l) - 1;
  if (!(inputs.size() == 1 && inputs[0] == (l == 0 ? GraphNode::kModelInput : previous))) {
    note += "  <- ";
    for (std::size_t k = 0; k < inputs.size(); ++k)
      note += (k ? ", " : "") + (inputs[k] == GraphNode::kModelInput ? std::string(kModelInputName)
                                                                       : model.layer_name(static_cast<std::size_t>(inputs[k])));
  }
  if (model.layer_tied_to(l) != GraphNode::kOwnParameters)
    note += "  tied to " + model.layer_name(static_cast<std::size_t>(model.layer_tied_to(l)));
  if (!model.fusion_note(l).empty()) note += "  fused: " + model.fusion_note(l);
  return note;
}

}  // namespace

std::string layer_table(const Model& model) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "  %-34s %-18s %12s\n", "layer", "output shape", "params");
  out += line;
  std::snprintf(line, sizeof(line), "  %-34s %-18s %12s\n", "input", to_string(model.input_sample_shape()).c_str(), "");
  out += line;
  std::int64_t total = 0;
  for (std::size_t l = 0; l < model.num_layers(); ++l) {
    std::int64_t params = 0;
    for (const ParamSpec& p : model.layer(l).parameter_specs()) params += shape_numel(p.shape);
    if (model.layer_tied_to(l) != GraphNode::kOwnParameters) params = 0;  // counted in the owner's row
    total += params;
    const std::string name = model.layer_name(l) + " (" + model.layer(l).kind() + ")";
    std::snprintf(line, sizeof(line), "  %-34s %-18s %12lld%s\n", name.c_str(),
                  to_string(model.layer_output_shape(l)).c_str(), static_cast<long long>(params),
                  wiring_note(model, l).c_str());
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
