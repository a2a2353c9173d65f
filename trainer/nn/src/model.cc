// model.cc — mirror/nn/model.h: takes a graph of nodes (or a chain of layers), lays the parameters out in one flat buffer (and the gradients in another, same layout) and the layers' buffers in a
// third, runs forward through the nodes in order and backward in reverse, summing the gradients of outputs
// used more than once and of parameters used by two nodes.
#include "mirror/nn/model.h"

#include <algorithm>

#include "chain_fusion.h"
#include "init.h"
#include "layout_bridge.h"
#include "mirror/error.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {


struct Model::Node {
  std::vector<std::ptrdiff_t> inputs;  // node indices, or GraphNode::kModelInput
  std::ptrdiff_t tied_to = GraphNode::kOwnParameters;
  std::vector<std::unique_ptr<detail::LayoutBridge>> bridges;  // one per input: NCHW unless the layer takes blocked
  std::size_t uses = 0;     // inputs of later nodes that take this node's output, plus 1 for the model's output
  bool needs_grad = false;  // this node or one it depends on has parameters: gradients must reach it
  // A tied node: for each of its parameters, the owner's global parameter index and where its own use's
  // gradient goes in tied_grads_ (floats).
  std::vector<std::size_t> owner_params;
  std::vector<std::int64_t> tied_grad_offsets;
  // Backward: the gradient of this node's output (a consumer's dx, or dy_sum when several consumers gave one).
  const Tensor* dy = nullptr;
  std::unique_ptr<Tensor> dy_sum;
  bool summing = false;
};

Shape model_sample_shape(const Shape& sample_shape) {
  MIRROR_CHECK(!sample_shape.empty() && sample_shape.size() <= 3, kInvalidArgument,
               "a sample shape has 1 to 3 dimensions ([features], [H, W] or [C, H, W]), got "
                   << to_string(sample_shape));
  for (std::int64_t d : sample_shape)
    MIRROR_CHECK(d >= 1, kInvalidArgument, "sample shape " << to_string(sample_shape) << " has a dimension < 1");
  if (sample_shape.size() == 2) return {1, sample_shape[0], sample_shape[1]};
  return sample_shape;
}

namespace {
ModelGraph chain_graph(std::vector<NamedLayer> layers, Shape input_sample_shape, std::int64_t num_classes,
                       Device device, std::string description) {
  ModelGraph graph{{}, layers.empty() ? 0 : layers.size() - 1, std::move(input_sample_shape), num_classes, device,
                   std::move(description), true};
  for (NamedLayer& l : layers) graph.nodes.push_back({std::move(l.name), std::move(l.layer)});
  return graph;
}
}  // namespace

std::int64_t ModelGraph::num_parameters() const {
  std::int64_t total = 0;
  for (const GraphNode& n : nodes)
    if (n.layer && n.tied_to == GraphNode::kOwnParameters)
      for (const ParamSpec& p : n.layer->parameter_specs()) total += shape_numel(p.shape);
  return total;
}

Model::Model(std::vector<NamedLayer> layers, Shape input_sample_shape, std::int64_t num_classes, Device device,
             std::string description)
    : Model(chain_graph(std::move(layers), std::move(input_sample_shape), num_classes, device, std::move(description))) {}

Model::Model(ModelGraph graph, ModelMemory memory)
    : description_(std::move(graph.description)), input_shape_(model_sample_shape(graph.input_sample_shape)),
      classes_(graph.num_classes), device_(graph.device), output_(graph.output), fusion_(graph.fusion),
      params_(graph.device, 0),
      grads_(graph.device, 0), buffers_(graph.device, 0) {
  MIRROR_CHECK(classes_ >= 2, kInvalidArgument, "model needs at least 2 classes, got " << classes_);
  MIRROR_CHECK(!graph.nodes.empty(), kInvalidArgument, "model '" << description_ << "' has no layers");
  MIRROR_CHECK(output_ < graph.nodes.size(), kInvalidArgument,
               "model '" << description_ << "': output node " << output_ << " of " << graph.nodes.size());
  fusion_notes_ = fusion_ ? detail::fuse_graph(graph) : std::vector<std::string>(graph.nodes.size());
  output_ = graph.output;
  std::vector<std::vector<std::ptrdiff_t>> inputs;
  std::vector<std::ptrdiff_t> tied_to;
  for (GraphNode& n : graph.nodes) {
    MIRROR_CHECK(n.layer != nullptr, kInvalidArgument, "model '" << description_ << "': layer " << n.name << " is null");
    layer_names_.push_back(std::move(n.name));
    layers_.push_back(std::move(n.layer));
    inputs.push_back(std::move(n.inputs));
    tied_to.push_back(n.tied_to);
  }
  wire(std::move(inputs), tied_to);
  lay_out(memory);
}

void Model::wire(std::vector<std::vector<std::ptrdiff_t>> inputs, std::vector<std::ptrdiff_t> tied_to) {
  nodes_.resize(layers_.size());
  for (std::size_t n = 0; n < layers_.size(); ++n) {
    Node& node = nodes_[n];
    node.inputs = inputs[n].empty() ? std::vector<std::ptrdiff_t>{static_cast<std::ptrdiff_t>(n) - 1} : inputs[n];
    if (n == 0 && inputs[n].empty()) node.inputs = {GraphNode::kModelInput};
    for (std::ptrdiff_t in : node.inputs) {
      MIRROR_CHECK(in == GraphNode::kModelInput || (in >= 0 && static_cast<std::size_t>(in) < n), kInvalidArgument,
                   "model '" << description_ << "': layer '" << layer_names_[n] << "' takes input " << in
                             << ", which is not an earlier layer");
      if (in >= 0) ++nodes_[in].uses;
      node.bridges.push_back(std::make_unique<detail::LayoutBridge>());
    }
    node.tied_to = tied_to[n];
    MIRROR_CHECK(node.tied_to == GraphNode::kOwnParameters ||
                     (node.tied_to >= 0 && static_cast<std::size_t>(node.tied_to) < n),
                 kInvalidArgument, "model '" << description_ << "': layer '" << layer_names_[n]
                                             << "' is tied to " << node.tied_to << ", which is not an earlier layer");
    node.dy_sum = std::make_unique<Tensor>(Shape{0}, device_);
  }
  ++nodes_[output_].uses;
  output_bridge_ = std::make_unique<detail::LayoutBridge>();
  tied_grads_ = DeviceBuffer(device_, 0);
}

const std::vector<std::ptrdiff_t>& Model::layer_inputs(std::size_t i) const { return nodes_.at(i).inputs; }

std::ptrdiff_t Model::layer_tied_to(std::size_t i) const { return nodes_.at(i).tied_to; }

void Model::lay_out(const ModelMemory& memory) {
  for (std::size_t n = 0; n < layers_.size(); ++n) {
    std::vector<Shape> in;
    for (std::ptrdiff_t i : nodes_[n].inputs) in.push_back(i == GraphNode::kModelInput ? input_shape_ : output_shapes_[i]);
    try {
      output_shapes_.push_back(layers_[n]->output_sample_shape_of(in));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidArgument || e.message().rfind("layer '", 0) == 0) throw;
      MIRROR_THROW(kInvalidArgument, "layer '" << layer_names_[n] << "' (" << layers_[n]->kind() << "): " << e.message());
    }
    first_param_.push_back(infos_.size());
    lay_out_parameters(n);
    bool needs_grad = first_param_[n] < infos_.size() || nodes_[n].tied_to != GraphNode::kOwnParameters;
    for (std::ptrdiff_t i : nodes_[n].inputs) needs_grad = needs_grad || (i >= 0 && nodes_[i].needs_grad);
    nodes_[n].needs_grad = needs_grad;
  }
  const Shape& out = output_shapes_[output_];
  MIRROR_CHECK(shape_numel(out) == classes_ || (!out.empty() && out.back() == classes_), kInvalidArgument,
               "model '" << description_ << "' ends in samples of shape " << to_string(out) << ", not the "
                         << classes_ << " class scores its data needs (per sample, or per position on the last axis)");
  first_param_.push_back(infos_.size());
  allow_blocked_outputs();

  place_flat_buffers(memory);
  std::int64_t tied = 0;
  for (const Node& node : nodes_)
    for (std::size_t k = 0; k < node.owner_params.size(); ++k) tied += infos_[node.owner_params[k]].numel;
  tied_grads_.reserve(static_cast<std::size_t>(tied) * sizeof(float));
  bind_layers();
  zero_grad();
  lay_out_buffers();
}

void Model::lay_out_parameters(std::size_t n) {
  Node& node = nodes_[n];
  if (node.tied_to == GraphNode::kOwnParameters) {
    for (const ParamSpec& p : layers_[n]->parameter_specs()) {
      const std::int64_t numel = shape_numel(p.shape);
      infos_.push_back({layer_names_[n] + "." + p.name, p.shape, total_, numel, p.normalization});
      total_ += numel;
    }
    return;
  }
  const std::size_t owner = static_cast<std::size_t>(node.tied_to);
  std::int64_t offset = 0;
  for (const Node& earlier : nodes_)
    for (std::size_t k = 0; k < earlier.owner_params.size(); ++k) offset += infos_[earlier.owner_params[k]].numel;
  for (const ParamSpec& p : layers_[n]->parameter_specs()) {
    const std::string name = layer_names_[owner] + "." + p.name;
    std::size_t found = first_param_[owner];
    while (found < first_param_[owner + 1] && infos_[found].name != name) ++found;
    MIRROR_CHECK(found < first_param_[owner + 1] && infos_[found].shape == p.shape, kInvalidArgument,
                 "layer '" << layer_names_[n] << "' (" << layers_[n]->kind() << ") is tied to '" << layer_names_[owner]
                           << "' but its parameter '" << p.name << "' " << to_string(p.shape)
                           << (found < first_param_[owner + 1] ? " has another shape there: " + to_string(infos_[found].shape)
                                                               : " is not one of that layer's"));
    node.owner_params.push_back(found);
    node.tied_grad_offsets.push_back(offset);
    offset += infos_[found].numel;
  }
}

void Model::allow_blocked_outputs() {
  // A plain link: node n + 1 takes node n's output alone, and nothing else does: a blocked tensor may pass.
  auto plain_link = [&](std::size_t n) {
    return n + 1 < nodes_.size() && nodes_[n].uses == 1 && n != output_ &&
           nodes_[n + 1].inputs == std::vector<std::ptrdiff_t>{static_cast<std::ptrdiff_t>(n)};
  };
  for (std::size_t n = 0; n < layers_.size(); ++n)
    layers_[n]->set_blocked_output(plain_link(n) && layers_[n + 1]->accepts_blocked());
}

void Model::lay_out_buffers() {
  std::vector<float> initial;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    first_buffer_.push_back(buffer_infos_.size());
    for (const BufferSpec& b : layers_[l]->buffer_specs()) {
      const std::int64_t n = shape_numel(b.shape);
      buffer_infos_.push_back({layer_names_[l] + "." + b.name, b.shape, buffer_total_, n});
      buffer_total_ += n;
      initial.insert(initial.end(), static_cast<std::size_t>(n), b.initial_value);
    }
  }
  first_buffer_.push_back(buffer_infos_.size());
  buffers_.reserve(static_cast<std::size_t>(buffer_total_) * sizeof(float));
  buffers_from_host(initial);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    std::vector<float*> pointers;
    for (std::size_t i = first_buffer_[l]; i < first_buffer_[l + 1]; ++i)
      pointers.push_back(buffer_data() + buffer_infos_[i].offset);
    if (!pointers.empty()) layers_[l]->bind_buffers(pointers);
  }
}

std::vector<float> Model::buffers_to_host() const {
  std::vector<float> out(static_cast<std::size_t>(buffer_total_));
  if (!out.empty()) copy_device_to_host(device_, out.data(), buffer_data(), out.size() * sizeof(float));
  return out;
}

void Model::buffers_from_host(std::span<const float> host) {
  MIRROR_CHECK(static_cast<std::int64_t>(host.size()) == buffer_total_, kInvalidArgument,
               "model '" << description_ << "' has " << buffer_total_ << " buffer values, got " << host.size());
  if (!host.empty()) copy_host_to_device(device_, buffer_data(), host.data(), host.size_bytes());
}

void Model::bind_layers() {
  float* tied_grads = static_cast<float*>(tied_grads_.data());
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    std::vector<ParamBinding> bindings;
    for (std::size_t i = first_param_[l]; i < first_param_[l + 1]; ++i)
      bindings.push_back({params() + infos_[i].offset, grads() + infos_[i].offset});
    const Node& node = nodes_[l];
    for (std::size_t k = 0; k < node.owner_params.size(); ++k)
      bindings.push_back({params() + infos_[node.owner_params[k]].offset, tied_grads + node.tied_grad_offsets[k]});
    if (!bindings.empty()) layers_[l]->bind_parameters(bindings);
  }
}

void Model::place_flat_buffers(const ModelMemory& memory) {
  const bool external = memory.parameters || memory.gradients;
  MIRROR_CHECK(!external || device_.is_cpu(), kInvalidArgument,
               "model '" << description_ << "': host memory given for a model on " << to_string(device_));
  params_data_ = memory.parameters ? memory.parameters(total_) : nullptr;
  grads_data_ = memory.gradients ? memory.gradients(total_) : nullptr;
  if (!params_data_) {
    params_.reserve(static_cast<std::size_t>(total_) * sizeof(float));
    params_data_ = static_cast<float*>(params_.data());
  }
  if (!grads_data_) {
    grads_.reserve(static_cast<std::size_t>(total_) * sizeof(float));
    grads_data_ = static_cast<float*>(grads_.data());
  }
}

Model::~Model() = default;

std::int64_t Model::input_features() const { return shape_numel(input_shape_); }

void Model::init_parameters(std::uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(total_));
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    for (std::size_t i = first_param_[l]; i < first_param_[l + 1]; ++i) {
      const ParamInfo& p = infos_[i];
      layers_[l]->init_parameter(i - first_param_[l],
                                 std::span<float>(host.data() + p.offset, static_cast<std::size_t>(p.numel)),
                                 detail::param_seed(seed, i));
    }
  }
  params_from_host(host);
}

void Model::zero_grad() { ops::fill(device_, grads(), total_, 0.0f); }

std::vector<float> Model::params_to_host() const {
  std::vector<float> out(static_cast<std::size_t>(total_));
  copy_device_to_host(device_, out.data(), params(), out.size() * sizeof(float));
  return out;
}

void Model::params_from_host(std::span<const float> host) {
  MIRROR_CHECK(static_cast<std::int64_t>(host.size()) == total_, kInvalidArgument,
               "model '" << description_ << "' has " << total_ << " parameters, got " << host.size() << " values");
  copy_host_to_device(device_, params(), host.data(), host.size_bytes());
}

std::vector<float> Model::grads_to_host() const {
  std::vector<float> out(static_cast<std::size_t>(total_));
  copy_device_to_host(device_, out.data(), grads(), out.size() * sizeof(float));
  return out;
}

void Model::grads_from_host(std::span<const float> host) {
  MIRROR_CHECK(static_cast<std::int64_t>(host.size()) == total_, kInvalidArgument,
               "model '" << description_ << "' has " << total_ << " gradients, got " << host.size() << " values");
  copy_host_to_device(device_, grads(), host.data(), host.size_bytes());
}

void Model::set_training(bool training) {
  for (auto& layer : layers_) layer->set_training(training);
}

const Tensor& Model::forward(const Tensor& x, const ForwardContext& context) {
  const std::int64_t in = input_features();
  MIRROR_CHECK(x.device() == device_, kInvalidArgument,
               "model on " << to_string(device_) << " got input on " << to_string(x.device()));
  // With a decode cache, a model of [T] token samples takes any number of positions (its layers check them).
  const bool decoding = context.cache != nullptr && input_shape_.size() == 1 && x.shape().size() == 2;
  MIRROR_CHECK(!x.shape().empty() && x.dim(0) >= 1 && (x.numel() == x.dim(0) * in || (decoding && x.dim(1) >= 1)),
               kInvalidArgument, "model expects input [batch, " << in << "], got " << to_string(x.shape()));
  MIRROR_CHECK(context.sample_ids.empty() || static_cast<std::int64_t>(context.sample_ids.size()) == x.dim(0),
               kInvalidArgument, "forward context has " << context.sample_ids.size() << " sample ids for a batch of "
                                                        << x.dim(0));
  batch_ = x.dim(0);
  context_ = context;
  std::vector<const Tensor*>& outputs = forward_outputs_;
  outputs.assign(layers_.size(), nullptr);
  std::vector<const Tensor*> xs;
  for (std::size_t n = 0; n < layers_.size(); ++n) {
    Node& node = nodes_[n];
    xs.clear();
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const Tensor& in = node.inputs[k] == GraphNode::kModelInput ? x : *outputs[node.inputs[k]];
      xs.push_back(&node.bridges[k]->input(in, layers_[n]->accepts_blocked()));
    }
    layers_[n]->set_forward_context(&context_);
    outputs[n] = &layers_[n]->forward_inputs(xs);
  }
  return output_bridge_->input(*outputs[output_], false);
}

void Model::deliver(std::size_t n, const Tensor* dx) {
  Node& node = nodes_[n];
  MIRROR_CHECK(dx != nullptr, kInternal, "model backward: layer '" << layer_names_[n] << "' got no gradient from a consumer");
  if (node.dy == nullptr) {
    node.dy = dx;
    return;
  }
  MIRROR_CHECK(dx->shape() == node.dy->shape() && dx->layout() == node.dy->layout(), kInternal,
               "model backward: gradients for layer '" << layer_names_[n] << "' of shapes " << to_string(node.dy->shape())
                                                       << " and " << to_string(dx->shape()));
  Tensor& sum = *node.dy_sum;
  if (!node.summing) {
    sum.resize(node.dy->shape());
    copy_device_to_device(device_, sum.data(), node.dy->data(), static_cast<std::size_t>(sum.numel()) * sizeof(float));
    if (node.dy->blocked()) sum.set_layout(node.dy->layout());
    node.summing = true;
    node.dy = &sum;
  }
  ops::axpy(device_, sum.numel(), 1.0f, dx->data(), sum.data());
}

LayerGradReady Model::ready_callback(std::size_t n, const GradReadyFn& on_grad_ready) {
  return [this, n, &on_grad_ready](std::size_t local) {
    const std::size_t global = first_param_[n] + local;
    const float* tied_grads = static_cast<const float*>(tied_grads_.data());
    for (std::size_t user = n + 1; user < nodes_.size(); ++user)
      for (std::size_t k = 0; k < nodes_[user].owner_params.size(); ++k)
        if (nodes_[user].owner_params[k] == global)
          ops::axpy(device_, infos_[global].numel, 1.0f, tied_grads + nodes_[user].tied_grad_offsets[k],
                    grads() + infos_[global].offset);
    if (on_grad_ready) on_grad_ready(global);
  };
}

bool Model::logits_may_hold_their_gradient() const {
  return nodes_[output_].uses == 1 && dynamic_cast<const Linear*>(layers_[output_].get()) != nullptr;
}

void Model::backward(const Tensor& dlogits, GradMode mode, const GradReadyFn& on_grad_ready) {
  MIRROR_CHECK(batch_ >= 1, kInvalidArgument, "model backward called before forward");
  const std::int64_t per_sample = shape_numel(output_shapes_[output_]);
  MIRROR_CHECK(dlogits.device() == device_ && dlogits.numel() == batch_ * per_sample, kInvalidArgument,
               "model backward expects dlogits of " << batch_ << " x " << to_string(output_shapes_[output_]) << " on "
                                                    << to_string(device_)
                                                  << ", got " << to_string(dlogits.shape()) << " on "
                                                  << to_string(dlogits.device()));
  for (Node& node : nodes_) {
    node.dy = nullptr;
    node.summing = false;
  }
  deliver(output_, output_bridge_->gradient(&dlogits));
  for (std::size_t n = layers_.size(); n-- > 0;) {
    Node& node = nodes_[n];
    if (node.dy == nullptr) continue;  // no node after it needs gradients, and it has no parameters
    bool need_dx = false;
    for (std::ptrdiff_t in : node.inputs) need_dx = need_dx || (in >= 0 && nodes_[in].needs_grad);
    const bool tied = node.tied_to != GraphNode::kOwnParameters;
    // A tied node's use of its owner's parameters: its own gradient, added to the owner's in ready_callback.
    std::vector<const Tensor*> dxs = layers_[n]->backward_inputs(*node.dy, tied ? GradMode::kOverwrite : mode, need_dx,
                                                                 tied ? LayerGradReady{} : ready_callback(n, on_grad_ready));
    if (!need_dx) continue;
    MIRROR_CHECK(dxs.size() == node.inputs.size(), kInternal,
                 "layer '" << layer_names_[n] << "' gave " << dxs.size() << " input gradients for " << node.inputs.size()
                           << " inputs");
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const std::ptrdiff_t in = node.inputs[k];
      if (in >= 0 && nodes_[in].needs_grad) deliver(static_cast<std::size_t>(in), node.bridges[k]->gradient(dxs[k]));
    }
  }
}

}  // namespace mirror::nn
