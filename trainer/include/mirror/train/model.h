// mirror/train/model.h — a model: a chain of layers built from a ModelSpec, with ALL parameters in ONE
// contiguous flat buffer on the device and ALL gradients in another with the same layout (parameter i at
// [offset_i, offset_i + numel_i), in layer order, no gaps), so data parallelism can all-reduce contiguous
// ranges of the gradients in buckets. Backward reports each parameter as soon as its gradient is final.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mirror/train/device.h"
#include "mirror/train/layer.h"
#include "mirror/train/model_spec.h"
#include "mirror/train/tensor.h"

namespace mirror::train {

struct ParamInfo {
  std::string name;      // "fc1.weight"
  Shape shape;           // [512, 784]
  std::int64_t offset;   // in floats, into params() and grads()
  std::int64_t numel;
};

// Called with the global index (into Model::parameters()) of a parameter whose gradient is final.
// Indices come in decreasing order, each exactly once per backward. On CUDA "final" means queued on the
// legacy default stream: work queued after it on that stream (e.g. NCCL on a blocking stream) sees it;
// host code must synchronize first.
using GradReadyFn = std::function<void(std::size_t param_index)>;

class Model {
 public:
  // input_sample_shape: one sample, e.g. {784}; num_classes >= 2. Parameters are allocated, uninitialised
  // until init_parameters() or params_from_host(); gradients are zero.
  Model(const ModelSpec& spec, Shape input_sample_shape, std::int64_t num_classes, Device device);
  Model(std::string_view spec, std::int64_t input_features, std::int64_t num_classes, Device device);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelSpec& spec() const { return spec_; }
  const Device& device() const { return device_; }
  const Shape& input_sample_shape() const { return input_shape_; }
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

  void set_training(bool training);

  // x: [batch, input sample shape...] (or [batch, input_features]) on the model's device; must stay alive
  // until backward. Returns logits [batch, num_classes], owned by the model, valid until the next forward.
  const Tensor& forward(const Tensor& x);
  // dlogits: gradient of the loss w.r.t. the logits of the last forward. Layers run in reverse; each
  // parameter's gradient is written (kOverwrite) or added to what is there (kAccumulate), then
  // on_grad_ready(index) is called for it.
  void backward(const Tensor& dlogits, GradMode mode = GradMode::kOverwrite, const GradReadyFn& on_grad_ready = {});

  std::size_t num_layers() const { return layers_.size(); }
  const Layer& layer(std::size_t i) const { return *layers_.at(i); }
  const std::string& layer_name(std::size_t i) const { return layer_names_.at(i); }

 private:
  void bind_layers();  // every layer's parameter and gradient pointers into the flat buffers
  // use_*_memory: copies `current` (num_parameters() floats) into `memory`, points `slot` at it, rebinds.
  void adopt_memory(float*& slot, const float* current, float* memory, const char* what);

  ModelSpec spec_;
  Shape input_shape_;
  std::int64_t classes_;
  Device device_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> layer_names_;
  std::vector<std::size_t> first_param_;  // global index of each layer's first parameter
  std::vector<ParamInfo> infos_;
  std::int64_t total_ = 0;
  DeviceBuffer params_, grads_;
  float* grad_memory_ = nullptr;   // set by use_gradient_memory
  float* param_memory_ = nullptr;  // set by use_parameter_memory
  std::int64_t batch_ = -1;  // batch of the last forward
};

}  // namespace mirror::train
