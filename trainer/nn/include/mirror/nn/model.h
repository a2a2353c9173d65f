// mirror/nn/model.h — a model: a graph of layers (nodes in an order where each takes only the model's input
// or earlier nodes' outputs; a chain is the graph where each takes the previous one) built for one input sample
// shape, with ALL parameters in ONE contiguous flat buffer on the device and ALL gradients in another with the
// same layout (parameter i at [offset_i, offset_i + numel_i), in node order, no gaps), so data parallelism can
// all-reduce contiguous ranges of the gradients in buckets. Forward runs the nodes in order; backward runs them
// in reverse, sums the gradients of an output that feeds several nodes, and reports each parameter as soon as
// its gradient is final. A node may use an earlier node's parameters (tied weights): they are stored once, and
// their gradient is the sum of both uses, reported after the owner's backward (the last use in backward).
// The layers' non-gradient state (BatchNorm's running statistics: Layer::buffer_specs) lives in a third flat
// buffer, laid out the same way, which checkpoints save and restore.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/layer.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

namespace detail {
class LayoutBridge;  // src/layout_bridge.h
}  // namespace detail

struct ParamInfo {
  std::string name;      // "fc1.weight"
  Shape shape;           // [512, 784]
  std::int64_t offset;   // in floats, into params() and grads()
  std::int64_t numel;
  bool normalization = false;  // a normalisation layer's scale/shift (ParamSpec::normalization)
};
// A non-gradient buffer ("bn1.running_mean"), laid out in the flat buffer array like a parameter.
using BufferInfo = ParamInfo;

// The shape a model takes for one sample of a dataset whose samples have `sample_shape`: [H, W] becomes
// [1, H, W] (one channel, for image layers); [F] and [C, H, W] stay as they are. Empty or non-positive
// dimensions throw kInvalidArgument.
Shape model_sample_shape(const Shape& sample_shape);

// Called with the global index (into Model::parameters()) of a parameter whose gradient is final.
// Indices come in decreasing order, each exactly once per backward. On CUDA "final" means queued on the
// legacy default stream: work queued after it on that stream (e.g. NCCL on a blocking stream) sees it;
// host code must synchronize first.
using GradReadyFn = std::function<void(std::size_t param_index)>;

// One layer of a model and its name ("fc1"; its parameters become "fc1.weight", ...).
struct NamedLayer {
  std::string name;
  std::unique_ptr<Layer> layer;
};

// A node of the model graph: a named layer, the nodes whose outputs it takes, in order (kModelInput: the
// model's input; empty: the previous node, or the model's input for the first), and the earlier node whose
// parameters it uses (kOwnParameters: its own; each of its parameters must exist in that node by local name and
// shape).
struct GraphNode {
  static constexpr std::ptrdiff_t kModelInput = -1;
  static constexpr std::ptrdiff_t kOwnParameters = -1;
  std::string name;
  std::unique_ptr<Layer> layer;
  std::vector<std::ptrdiff_t> inputs = {};
  std::ptrdiff_t tied_to = kOwnParameters;
};

// A model's layers, built and checked for one input shape (model_build.h), before any memory is given to them:
// what the model will need is known, so a trainer can find that memory first.
struct ModelGraph {
  std::vector<GraphNode> nodes;
  std::size_t output = 0;        // the node whose output is the model's
  Shape input_sample_shape;      // as given (model_sample_shape applies)
  std::int64_t num_classes = 0;
  Device device;
  std::string description;       // what Model::description() returns
  bool fusion = true;            // the fusion pass (chain_fusion.h) runs; off: every layer as written
  // Floats of the flat parameter buffer (and of the gradient buffer): every parameter once, a tied one in its
  // owner only.
  std::int64_t num_parameters() const;
};

// Where a model's flat parameter and gradient buffers live. Empty functions: the model allocates them on its
// device. A data-parallel trainer on one host's CPUs gives memory shared with the other ranks, which their
// collectives read and write directly (coll::Communicator::allocate_shared): each function is called once,
// while the model is built, with the count of floats, and returns host memory that outlives the model, or null
// to leave that buffer to the model.
struct ModelMemory {
  std::function<float*(std::int64_t count)> parameters, gradients;
};

class Model {
 public:
  // The graph's input_sample_shape: one sample, {784}, {28, 28} (taken as {1, 28, 28}: model_sample_shape),
  // {1, 28, 28} or {3, 32, 32}; num_classes >= 2. Parameters are allocated (or taken from `memory`),
  // uninitialised until init_parameters() or params_from_host(); gradients are zero; buffers hold their specs'
  // initial values. Errors (a bad input index, a tied node whose parameters the owner lacks, shapes that do not
  // fit) name the node.
  explicit Model(ModelGraph graph, ModelMemory memory = {});
  // A chain of given layers (each on `device`); the last one's output sample must hold num_classes values.
  // `description` is what description() returns.
  Model(std::vector<NamedLayer> layers, Shape input_sample_shape, std::int64_t num_classes, Device device,
        std::string description);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // What a checkpoint stores to rebuild this model: the canonical --model text of an MLP ("mlp:512,256"), else
  // the model description's JSON.
  const std::string& description() const { return description_; }
  const Device& device() const { return device_; }
  const Shape& input_sample_shape() const { return input_shape_; }  // after model_sample_shape()
  std::int64_t input_features() const;
  std::int64_t num_classes() const { return classes_; }

  const std::vector<ParamInfo>& parameters() const { return infos_; }
  std::int64_t num_parameters() const { return total_; }  // numel of the flat buffers
  float* params() { return params_data_; }
  const float* params() const { return params_data_; }
  float* grads() { return grads_data_; }
  const float* grads() const { return grads_data_; }

  // Deterministic: the same seed gives the same values on every machine and device (computed on the host
  // with a seeded mt19937_64 per parameter, then copied). See docs/compute.md.
  void init_parameters(std::uint64_t seed);
  void zero_grad();

  std::vector<float> params_to_host() const;
  void params_from_host(std::span<const float> host);  // exactly num_parameters() values
  std::vector<float> grads_to_host() const;
  void grads_from_host(std::span<const float> host);

  // Non-gradient buffers of all layers, in layer order, in one flat array of num_buffer_values() floats on
  // the device (empty for a model without any).
  const std::vector<BufferInfo>& buffers() const { return buffer_infos_; }
  std::int64_t num_buffer_values() const { return buffer_total_; }
  float* buffer_data() { return static_cast<float*>(buffers_.data()); }
  const float* buffer_data() const { return static_cast<const float*>(buffers_.data()); }
  std::vector<float> buffers_to_host() const;
  void buffers_from_host(std::span<const float> host);  // exactly num_buffer_values() values

  void set_training(bool training);

  // x: [batch, input sample shape...] (or any shape of batch x input_features values) on the model's
  // device; must stay alive until backward. `context` (seed, step, sample ids, replica reducer) is handed
  // to every layer for this forward and its backward. Returns logits [batch, num_classes], owned by the
  // model, valid until the next forward. With a decode cache in `context` (decode_cache.h), a model of [T]
  // token samples takes ids [batch, T'] of any T' >= 1: positions [position_offset, position_offset + T').
  const Tensor& forward(const Tensor& x, const ForwardContext& context = {});
  // dlogits: gradient of the loss w.r.t. the logits of the last forward. Layers run in reverse; each
  // parameter's gradient is written (kOverwrite) or added to what is there (kAccumulate), then
  // on_grad_ready(index) is called for it.
  void backward(const Tensor& dlogits, GradMode mode = GradMode::kOverwrite, const GradReadyFn& on_grad_ready = {});
  // Whether backward may take dlogits written over the logits forward returned (the loss's gradient in place,
  // as llm.c's classifier writes it): no other node reads the output node's output, and its layer, a linear
  // layer, does not read it in backward. A language model's logits are its largest activation, so this saves
  // their size (823 MB for gpt2-small at batch 4 and context 1024).
  bool logits_may_hold_their_gradient() const;

  std::size_t num_layers() const { return layers_.size(); }
  const Layer& layer(std::size_t i) const { return *layers_.at(i); }
  const std::string& layer_name(std::size_t i) const { return layer_names_.at(i); }
  // Shape of one output sample of layer i.
  const Shape& layer_output_shape(std::size_t i) const { return output_shapes_.at(i); }
  // The nodes layer i takes its inputs from (GraphNode::kModelInput: the model's input), resolved (never
  // empty), and the node whose parameters it uses (GraphNode::kOwnParameters: its own).
  const std::vector<std::ptrdiff_t>& layer_inputs(std::size_t i) const;
  std::ptrdiff_t layer_tied_to(std::size_t i) const;
  std::size_t output_layer() const { return output_; }
  // The layers node i stands for when the fusion pass made it of several ("bn1, relu1, pool1"), else "".
  const std::string& fusion_note(std::size_t i) const { return fusion_notes_.at(i); }

 private:
  struct Node;  // wiring and backward scratch of one node (model.cc)
  void wire(std::vector<std::vector<std::ptrdiff_t>> inputs, std::vector<std::ptrdiff_t> tied_to);
  void lay_out(const ModelMemory& memory);  // output shapes, parameter layout, flat buffers, bindings
  void lay_out_parameters(std::size_t node);  // node's parameters: its own in infos_, or its owner's when tied
  void allow_blocked_outputs();   // blocked tensors between plainly linked CPU nodes that take them
  // Backward: dx (of a consumer) joins the gradient of node n's output (summed when several consumers).
  void deliver(std::size_t n, const Tensor* dx);
  // The callback node n's layer calls for its own parameters: adds the tied users' gradients, then reports.
  LayerGradReady ready_callback(std::size_t n, const GradReadyFn& on_grad_ready);
  void bind_layers();  // every layer's parameter and gradient pointers into the flat buffers
  void lay_out_buffers();  // buffer_infos_ from the layers' buffer specs, allocated, initialised and bound
  // The flat parameter and gradient buffers: from `memory` where it gives them, else the model's own.
  void place_flat_buffers(const ModelMemory& memory);

  std::string description_;
  Shape input_shape_;
  std::int64_t classes_;
  Device device_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> layer_names_;
  std::vector<Node> nodes_;       // one per layer
  std::size_t output_ = 0;        // the node whose output is the model's
  bool fusion_ = true;
  std::vector<std::string> fusion_notes_;
  // Gives the logits in NCHW.
  std::unique_ptr<detail::LayoutBridge> output_bridge_;
  DeviceBuffer tied_grads_;       // the gradients of tied nodes' uses, added to the owners' in backward
  std::vector<const Tensor*> forward_outputs_;  // each node's output in the last forward
  std::vector<Shape> output_shapes_;
  std::vector<std::size_t> first_param_;  // global index of each layer's first parameter
  std::vector<ParamInfo> infos_;
  std::int64_t total_ = 0;
  DeviceBuffer params_, grads_;
  std::vector<BufferInfo> buffer_infos_;
  std::vector<std::size_t> first_buffer_;  // index into buffer_infos_ of each layer's first buffer
  std::int64_t buffer_total_ = 0;
  DeviceBuffer buffers_;
  ForwardContext context_;  // of the last forward; the layers point at it
  float* params_data_ = nullptr;   // params_' memory, or ModelMemory's
  float* grads_data_ = nullptr;
  std::int64_t batch_ = -1;  // batch of the last forward
};

}  // namespace mirror::nn
