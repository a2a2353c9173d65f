// mirror/nn/residual.h — a residual block: y = body(x) + shortcut(x), each a chain of layers; an empty
// shortcut is the identity (y = body(x) + x). The block's parameters are its children's, laid out body first
// (names "body.<child>.<param>"), then shortcut ("shortcut.<child>.<param>"); buffers likewise. Backward runs
// the shortcut first and then the body, so gradients are reported in decreasing index order, as the model's
// contract wants; dx is the sum of both branches' input gradients. Children get the block's training mode
// and forward context at every forward.
#pragma once

#include <memory>
#include <vector>

#include "mirror/nn/layer.h"
#include "mirror/nn/model.h"

namespace mirror::nn {

struct LayerArgs;

namespace detail {
class LayoutBridge;     // src/layout_bridge.h
class LayoutConverter;
struct NormalisationHandOver;  // src/bn_hand_over.h
}  // namespace detail

class Residual final : public Layer {
 public:
  // Built for samples of `input`: both branches must produce the same output shape (else kInvalidArgument
  // naming both shapes and `name`).
  // fusion: the chain fusions inside each branch and the body's last BatchNorm normalised in the add (off: every
  // layer as written).
  Residual(std::vector<NamedLayer> body, std::vector<NamedLayer> shortcut, Shape input, Device device,
           const std::string& name = "residual", bool fusion = true);
  ~Residual() override;
  // {"type": "residual", "body": [...], "shortcut": [...]}
  static std::unique_ptr<Layer> create(const LayerArgs& args);

  std::string kind() const override { return relu_after_ ? "residual+relu" : "residual"; }
  // The body's layers, then the shortcut's, each with its output shape (and theirs, one deeper, for a block
  // inside the block).
  std::vector<SubLayerRow> sublayer_rows() const override;
  Shape output_sample_shape(const Shape& input_sample_shape) const override;
  std::vector<ParamSpec> parameter_specs() const override;
  void bind_parameters(std::span<const ParamBinding> bindings) override;
  void init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const override;
  std::vector<BufferSpec> buffer_specs() const override;
  void bind_buffers(std::span<float* const> buffers) override;
  // Blocked tensors go through (on the CPU): the output takes the body's layout, the shortcut's is converted to it.
  // On the CPU: a ReLU after the block is applied in the add's pass (y = relu(body + shortcut)), and dy is
  // masked by y > 0 once before both branches.
  bool absorb_following_relu();  // as BatchNorm2d's (chain_fusion.h)
  // Whether the last forward's add normalised the body's output itself: a body ending in a BatchNorm2d hands its
  // normalisation to the add on blocked tensors (CPU; src/bn_hand_over.h). For tests.
  bool normalised_body() const { return normalised_body_; }

  const Tensor& forward(const Tensor& x) override;
  const Tensor* backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) override;

 private:
  struct Child {
    std::string name;   // "body.conv1"
    std::unique_ptr<Layer> layer;
    std::size_t first_param = 0, params = 0;    // block-local parameter indices
    std::size_t first_buffer = 0, buffers = 0;
    std::unique_ptr<detail::LayoutBridge> bridge;  // NCHW for a layer that takes no blocked tensors
  };
  const Tensor& masked_by_relu(const Tensor& dy);  // dy_masked_ = dy · [y_ > 0] (ops' relu_backward)
  const Tensor& run_chain(std::vector<Child>& chain, const Tensor& x);
  // Backward through `chain` from dy; returns the chain's dx (or &dy for an empty chain).
  const Tensor* backward_chain(std::vector<Child>& chain, const Tensor& dy, GradMode mode, bool need_dx,
                               const LayerGradReady& grad_ready);
  // Each layer of a chain may hand a blocked output on when the next one takes it; the last as `last` says.
  static void allow_blocked(std::vector<Child>& chain, bool last);
  std::vector<Child*> children();
  std::vector<const Child*> children() const;

  std::vector<Child> body_, shortcut_;
  Shape input_, output_;
  Device device_;
  Tensor y_, dx_;
  bool relu_after_ = false;  // absorb_following_relu: y_ = relu(body + shortcut); dy_masked_ = dy · [y_ > 0]
  std::shared_ptr<detail::NormalisationHandOver> body_hand_over_;  // from the body's last BatchNorm2d
  bool normalised_body_ = false;
  const Tensor* x_ = nullptr;       // input of the last forward
  Tensor dy_masked_;
  // When the shortcut's output layout is not the body's: the shortcut in the body's layout, dy in the shortcut's.
  Layout x_layout_ = Layout::kNchw, shortcut_layout_ = Layout::kNchw;
  Tensor shortcut_y_, shortcut_dy_;
  std::unique_ptr<detail::LayoutConverter> to_body_, to_shortcut_;
};

}  // namespace mirror::nn
