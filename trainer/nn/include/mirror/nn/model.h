// mirror/nn/model.h — a model: a chain of layers built from a ModelSpec for one input sample shape, with ALL
// parameters in ONE contiguous flat buffer on the device and ALL gradients in another with the same layout
// (parameter i at [offset_i, offset_i + numel_i), in layer order, no gaps), so data parallelism can all-reduce
// contiguous ranges of the gradients in buckets. Backward reports each parameter as soon as its gradient is
// final. The layers' non-gradient state (BatchNorm's running statistics: Layer::buffer_specs) lives in a
// third flat buffer, laid out the same way, which checkpoints save and restore.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/layer.h"
#include "mirror/nn/model_spec.h"
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

class Model {
 public:
  // input_sample_shape: one sample, {784}, {28, 28} (taken as {1, 28, 28}: model_sample_shape), {1, 28, 28}
  // or {3, 32, 32}; num_classes >= 2. Parameters are allocated, uninitialised until init_parameters() or
  // params_from_host(); gradients are zero; buffers hold their specs' initial values.
  Model(const ModelSpec& spec, Shape input_sample_shape, std::int64_t num_classes, Device device);
  Model(std::string_view spec, Shape input_sample_shape, std::int64_t num_classes, Device device);
  // A flat sample of input_features values ({input_features}).
  Model(std::string_view spec, std::int64_t input_features, std::int64_t num_classes, Device device);
  // A chain of given layers (each on `device`); the last one's output sample must hold num_classes values.
  // `description` is what description() returns.
  Model(std::vector<NamedLayer> layers, Shape input_sample_shape, std::int64_t num_classes, Device device,
        std::string description);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelSpec& spec() const { return spec_; }
  // What a checkpoint stores to rebuild this model: today the canonical --model text ("mlp:512,256").
  const std::string& description() const { return description_; }
  const Device& device() const { return device_; }
  const Shape& input_sample_shape() const { return input_shape_; }  // after model_sample_shape()
  std::int64_t input_features() const;
  std::int64_t num_classes() const { return classes_; }

  const std::vector<ParamInfo>& parameters() const { return infos_; }
  std::int64_t num_parameters() const { return total_; }  // numel of the flat buffers
  float* params() { return param_memory_ ? param_memory_ : static_cast<float*>(params_.data()); }
  const float* params() const { return param_memory_ ? param_memory_ : static_cast<const float*>(params_.data()); }
  float* grads() { return grad_memory_ ? grad_memory_ : static_cast<float*>(grads_.data()); }
  const float* grads() const { return grad_memory_ ? grad_memory_ : static_cast<const float*>(grads_.data()); }
  // CPU models only: from now on the gradients live in `memory` (num_parameters() floats, owned by the
  // caller, alive as long as the model): the current gradients are copied there and the layers rebound.
  // The trainer puts them in a communicator's shared buffer, which the shared-memory allreduce reads and
  // writes directly (coll::Communicator::allocate_shared).
  void use_gradient_memory(float* memory);
  // The same for the parameters (the trainer's sharded optimizer step all-gathers them directly).
  void use_parameter_memory(float* memory);

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
  // model, valid until the next forward.
  const Tensor& forward(const Tensor& x, const ForwardContext& context = {});
  // dlogits: gradient of the loss w.r.t. the logits of the last forward. Layers run in reverse; each
  // parameter's gradient is written (kOverwrite) or added to what is there (kAccumulate), then
  // on_grad_ready(index) is called for it.
  void backward(const Tensor& dlogits, GradMode mode = GradMode::kOverwrite, const GradReadyFn& on_grad_ready = {});

  std::size_t num_layers() const { return layers_.size(); }
  const Layer& layer(std::size_t i) const { return *layers_.at(i); }
  const std::string& layer_name(std::size_t i) const { return layer_names_.at(i); }
  // Shape of one output sample of layer i.
  const Shape& layer_output_shape(std::size_t i) const { return output_shapes_.at(i); }

 private:
  void lay_out();      // output shapes, parameter layout, flat buffers, bindings (after the layers exist)
  void bind_layers();  // every layer's parameter and gradient pointers into the flat buffers
  void lay_out_buffers();  // buffer_infos_ from the layers' buffer specs, allocated, initialised and bound
  // use_*_memory: copies `current` (num_parameters() floats) into `memory`, points `slot` at it, rebinds.
  void adopt_memory(float*& slot, const float* current, float* memory, const char* what);

  ModelSpec spec_;
  std::string description_;
  Shape input_shape_;
  std::int64_t classes_;
  Device device_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> layer_names_;
  // One per layer (NCHW for a layer that takes no blocked tensors), plus one that gives the logits in NCHW.
  std::vector<std::unique_ptr<detail::LayoutBridge>> bridges_;
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
  float* grad_memory_ = nullptr;   // set by use_gradient_memory
  float* param_memory_ = nullptr;  // set by use_parameter_memory
  std::int64_t batch_ = -1;  // batch of the last forward
};

}  // namespace mirror::nn
