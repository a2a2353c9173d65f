// mirror/nn/layer.h — the one interface every layer implements, so that new layers (convolution,
// pooling, dropout, ...) join a model without touching the rest. A layer declares its parameters' shapes;
// the model places them in its flat buffers and binds the layer to them; forward caches what backward needs;
// backward produces the parameter gradients, reports each one as soon as it is final, then the input gradient.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"

namespace mirror::nn {

// Whether backward overwrites the gradient buffers or adds to them (gradient accumulation).
enum class GradMode { kOverwrite, kAccumulate };

// A parameter as a layer declares it: local name ("weight") and shape. normalization: the scale or shift
// of a normalisation layer (BatchNorm's γ, β), which by convention takes no weight decay (weight_decay.h).
struct ParamSpec {
  std::string name;
  Shape shape;
  bool normalization = false;
};

// Where the model put one parameter: value and gradient, both memory of the layer's device.
struct ParamBinding {
  float* value = nullptr;
  float* grad = nullptr;
};

// Non-gradient state of a layer (BatchNorm's running statistics): declared by the layer, stored by the model
// in one flat buffer on the layer's device (saved in checkpoints under /buffers), bound like parameters.
struct BufferSpec {
  std::string name;           // "running_mean"
  Shape shape;
  float initial_value = 0.0f;
};

// What SyncBN needs across all data-parallel replicas. The trainer implements it over its communicator; the
// nn core sees only this interface. Pointers are memory of the layer's device. Collective: every replica
// calls the same methods in the same order.
class ReplicaReducer {
 public:
  virtual ~ReplicaReducer() = default;
  // data[i] = the sum of every replica's data[i], in place (backward's gradient sums).
  virtual void sum(float* data, std::size_t count) = 0;
  // all[r·count + i] = replica r's mine[i], for every replica r (forward's per-replica statistics).
  virtual void gather(const float* mine, float* all, std::size_t count) = 0;
  virtual int replicas() const = 0;
};

class DecodeCache;  // decode_cache.h

// What a forward pass may depend on besides its input; the model sets it on every layer before forward.
struct ForwardContext {
  std::uint64_t seed = 0;
  std::int64_t step = 0;                        // optimizer step (dropout masks)
  std::span<const std::int64_t> sample_ids;     // dataset index of each sample of the batch (host), may be empty
  ReplicaReducer* reducer = nullptr;            // null: statistics of the local batch only
  // Incremental decoding (decode_cache.h; generation, never training): the input holds positions
  // [position_offset, position_offset + T) of its sequences, and attention layers keep their keys and values
  // in `cache` and attend over every position cached before. Null cache: nothing is kept, and attention refuses
  // a position_offset other than 0.
  DecodeCache* cache = nullptr;
  std::int64_t position_offset = 0;
};

// Called by Layer::backward with the layer-local index of a parameter whose gradient is final.
using LayerGradReady = std::function<void(std::size_t local_index)>;

// One row of the layer table for a layer inside another (a residual block's own layers), as Keras'
// summary(expand_nested=True) shows them: its name inside the block ("body.conv1"), kind, output shape of one
// sample, parameter count, and how deep it sits (1: directly inside a top-level layer).
struct SubLayerRow {
  std::string name;
  std::string kind;
  Shape output;
  std::int64_t params = 0;
  int depth = 1;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // The rows a layer table shows under this layer, in order (none: a layer with no layers inside).
  virtual std::vector<SubLayerRow> sublayer_rows() const { return {}; }

  // Kind of layer, e.g. "linear", "relu".
  virtual std::string kind() const = 0;
  // Shape of one output sample given the shape of one input sample (batch dimension excluded);
  // throws kInvalidArgument when the input does not fit the layer.
  virtual Shape output_sample_shape(const Shape& input_sample_shape) const = 0;
  // Parameters in the order the layer wants them laid out (may be empty).
  virtual std::vector<ParamSpec> parameter_specs() const { return {}; }
  // Points the layer at its parameters (one binding per parameter_specs() entry).
  virtual void bind_parameters(std::span<const ParamBinding> bindings) {}
  // Fills the host values of parameter `local_index` from `seed` (deterministic on every machine).
  virtual void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const {}

  // Non-gradient state (may be empty), and where the model put it: one pointer per buffer_specs() entry,
  // memory of the layer's device, initialised to each spec's initial_value.
  virtual std::vector<BufferSpec> buffer_specs() const { return {}; }
  virtual void bind_buffers(std::span<float* const> buffers) {}
  // Set by the model before every forward; valid for the duration of that forward (and its backward).
  void set_forward_context(const ForwardContext* context) { context_ = context; }

  // Channel-blocked layouts (tensor.h's Layout) between CPU layers, as data the layer holds (no hook to override):
  // accepts_blocked: forward takes x in a blocked layout (and then returns dx in x's layout), set by the layer when
  // it is built; a model converts a blocked tensor to NCHW before a layer that does not (layout_bridge.h).
  // set_blocked_output: the model allows the layer to give its output in a blocked layout when the next layer
  // accepts it (read at each forward); by default (a layer used alone) outputs are NCHW. Either way dy arrives
  // in the layout of the output and dx leaves in the layout of the input.
  bool accepts_blocked() const { return accepts_blocked_; }
  void set_blocked_output(bool allowed) { blocked_output_ = allowed; }

  // Training or evaluation behaviour (matters for dropout and the like).
  void set_training(bool training) { training_ = training; }
  bool training() const { return training_; }

  // x: [batch, sample shape...] on the layer's device, alive until backward. Returns the output, owned by
  // the layer and valid until the next forward.
  virtual const Tensor& forward(const Tensor& x) = 0;
  // dy: gradient of the output of the last forward. Writes (kOverwrite) or adds (kAccumulate) parameter
  // gradients, calls grad_ready(local index) once per parameter as soon as its gradient is queued (on CUDA:
  // queued on the legacy default stream), then returns dx (owned by the layer) or nullptr if !need_dx.
  virtual const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) = 0;

  // A node of the model graph may take several inputs (the merges: add, concat). The model calls these three;
  // a layer of one input gets them from its single-input forms above, and a merge overrides all three.
  // inputs: one sample shape per input; throws kInvalidArgument when the count or the shapes do not fit.
  virtual Shape output_sample_shape_of(std::span<const Shape> inputs) const;
  // xs: one tensor per input, alive until backward.
  virtual const Tensor& forward_inputs(std::span<const Tensor* const> xs);
  // One dx per input (each owned by the layer or one of the dy/xs given, valid until the next backward), all
  // null when !need_dx.
  virtual std::vector<const Tensor*> backward_inputs(const Tensor& dy, GradMode mode, bool need_dx,
                                                     const LayerGradReady& grad_ready);

 protected:
  bool training_ = true;
  bool accepts_blocked_ = false;  // set by a layer that takes blocked tensors (on the CPU), when it is built
  bool blocked_output_ = false;
  const ForwardContext* context_ = nullptr;  // null in unit tests: seed 0, step 0, no ids, no reducer
};

}  // namespace mirror::nn
