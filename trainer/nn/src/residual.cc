// residual.cc — mirror/nn/residual.h: two chains over one input, their outputs added (one pass on the CPU,
// copy + axpy on CUDA), their parameters and buffers concatenated body first. Blocked layouts pass through each
// chain as through a model (layout_bridge.h). A ReLU after the block may run in the add's pass (CPU), and so may the
// normalisation of a BatchNorm2d that ends the body (bn_hand_over.h: its output is then never written).
#include "mirror/nn/residual.h"

#include <cstdint>

#include "bn_hand_over.h"
#include "chain_fusion.h"
#include "layout_bridge.h"
#include "mirror/error.h"
#include "mirror/nn/batch_norm2d.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {
namespace {

std::vector<NamedLayer> build_chain(const std::vector<LayerDescription>& layers, Shape& shape, const LayerArgs& args,
                                    const std::string& prefix) {
  std::vector<NamedLayer> chain;
  for (const LayerDescription& d : layers) {
    auto layer = make_layer(d, shape, args.device, args.classes, prefix, args.fusion);
    shape = layer->output_sample_shape(shape);
    chain.push_back({d.name, std::move(layer)});
  }
  return chain;
}

// out = a + b over n floats (CPU).
void add_cpu(const float* __restrict a, const float* __restrict b, float* __restrict out, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// out = relu(a + b) over n floats (CPU; ops' relu_forward of add_cpu's sum).
void add_relu_cpu(const float* __restrict a, const float* __restrict b, float* __restrict out, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    out[i] = v > 0.0f ? v : 0.0f;
  }
}

// out = [relu](affine(x) + s) over a blocked batch of `runs` blocks of B channels, `area` pixels each:
// BatchNorm2d's normalise (bn_hand_over.h's map, its expression) and then add_cpu's sum (add_relu_cpu's ReLU).
template <std::int64_t B, bool kRelu>
void normalise_add(const float* __restrict x, const detail::ChannelAffine& a, const float* __restrict s,
                   float* __restrict out, std::int64_t runs, std::int64_t blocks_per_sample, std::int64_t area) {
  for (std::int64_t k = 0; k < runs; ++k) {
    const std::int64_t c0 = k % blocks_per_sample * B, base = k * area * B;
    const float *__restrict hi = a.hi + c0, *__restrict lo = a.lo + c0, *__restrict sc = a.scale + c0,
                *__restrict t = a.shift + c0;
    for (std::int64_t p = 0; p < area; ++p)
#pragma omp simd
      for (std::int64_t l = 0; l < B; ++l) {
        const std::int64_t i = base + p * B + l;
        const float normalised = ((x[i] - hi[l]) - lo[l]) * sc[l] + t[l];
        const float v = normalised + s[i];
        out[i] = kRelu ? (v > 0.0f ? v : 0.0f) : v;
      }
  }
}

void normalise_add_cpu(const Tensor& x, const detail::ChannelAffine& a, const float* s, bool relu, float* out) {
  const std::int64_t b = channel_block(x.layout()), runs = x.dim(0) * x.dim(1) / b, area = x.dim(2) * x.dim(3);
  const std::int64_t per_sample = x.dim(1) / b;
  MIRROR_CHECK(b == 8 || b == 16, kInternal,
               "a residual add normalises blocked tensors only, got " << to_string(x.layout()));
  const auto kernel = b == 8 ? (relu ? normalise_add<8, true> : normalise_add<8, false>)
                             : (relu ? normalise_add<16, true> : normalise_add<16, false>);
  kernel(x.data(), a, s, out, runs, per_sample, area);
}

// A branch after the fusion pass, its fused layers named as chain_fusion.h names them.
std::vector<NamedLayer> fused(std::vector<NamedLayer> chain) {
  std::vector<NamedLayer> out;
  for (detail::FusedLayer& f : detail::fuse_chain(std::move(chain))) out.push_back(std::move(f.layer));
  return out;
}

}  // namespace

bool Residual::absorb_following_relu() {
  relu_after_ = device_.is_cpu();
  return relu_after_;
}

void Residual::allow_blocked(std::vector<Child>& chain, bool last) {
  for (std::size_t i = 0; i < chain.size(); ++i)
    chain[i].layer->set_blocked_output(i + 1 < chain.size() ? chain[i + 1].layer->accepts_blocked() : last);
}

Residual::Residual(std::vector<NamedLayer> body, std::vector<NamedLayer> shortcut, Shape input, Device device,
                   const std::string& name, bool fusion)
    : input_(std::move(input)), device_(device), y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(!body.empty(), kInvalidArgument, "residual block '" << name << "' has an empty body");
  if (fusion) {  // the fusion pass over each branch (chain_fusion.h)
    body = fused(std::move(body));
    shortcut = fused(std::move(shortcut));
  }
  Shape body_out = input_, shortcut_out = input_;
  for (NamedLayer& l : body) {
    body_out = l.layer->output_sample_shape(body_out);
    body_.push_back({"body." + l.name, std::move(l.layer), 0, 0, 0, 0, std::make_unique<detail::LayoutBridge>()});
  }
  for (NamedLayer& l : shortcut) {
    shortcut_out = l.layer->output_sample_shape(shortcut_out);
    shortcut_.push_back(
        {"shortcut." + l.name, std::move(l.layer), 0, 0, 0, 0, std::make_unique<detail::LayoutBridge>()});
  }
  MIRROR_CHECK(body_out == shortcut_out, kInvalidArgument,
               "residual block '" << name << "': the body gives samples of shape " << to_string(body_out)
                                  << " but the shortcut " << to_string(shortcut_out)
                                  << (shortcut_.empty() ? " (the identity)" : "")
                                  << "; they must match to be added");
  output_ = body_out;
  to_body_ = std::make_unique<detail::LayoutConverter>();
  to_shortcut_ = std::make_unique<detail::LayoutConverter>();
  // A body ending in a BatchNorm2d leaves its normalisation to the add (CPU, blocked tensors).
  if (auto* bn = dynamic_cast<BatchNorm2d*>(body_.back().layer.get()); fusion && bn != nullptr && device_.is_cpu()) {
    auto hand_over = std::make_shared<detail::NormalisationHandOver>();
    if (bn->hand_normalisation_over(hand_over)) body_hand_over_ = std::move(hand_over);
  }
  accepts_blocked_ = device_.is_cpu();  // blocked tensors go through: the output in the body's layout
  allow_blocked(body_, false);
  allow_blocked(shortcut_, false);
  std::size_t p = 0, b = 0;
  for (Child* c : children()) {
    c->first_param = p;
    c->params = c->layer->parameter_specs().size();
    p += c->params;
    c->first_buffer = b;
    c->buffers = c->layer->buffer_specs().size();
    b += c->buffers;
  }
}

Residual::~Residual() = default;


std::unique_ptr<Layer> Residual::create(const LayerArgs& args) {
  const std::string prefix = args.description.name + ".";
  Shape body_shape = args.input, shortcut_shape = args.input;
  auto body = build_chain(args.description.body, body_shape, args, prefix + "body.");
  auto shortcut = build_chain(args.description.shortcut, shortcut_shape, args, prefix + "shortcut.");
  return std::make_unique<Residual>(std::move(body), std::move(shortcut), args.input, args.device,
                                    args.description.name, args.fusion);
}

std::vector<Residual::Child*> Residual::children() {
  std::vector<Child*> all;
  for (Child& c : body_) all.push_back(&c);
  for (Child& c : shortcut_) all.push_back(&c);
  return all;
}

std::vector<const Residual::Child*> Residual::children() const {
  std::vector<const Child*> all;
  for (const Child& c : body_) all.push_back(&c);
  for (const Child& c : shortcut_) all.push_back(&c);
  return all;
}

std::vector<SubLayerRow> Residual::sublayer_rows() const {
  std::vector<SubLayerRow> rows;
  for (const std::vector<Child>* chain : {&body_, &shortcut_}) {
    Shape shape = input_;
    for (const Child& c : *chain) {
      shape = c.layer->output_sample_shape(shape);
      std::int64_t params = 0;
      for (const ParamSpec& p : c.layer->parameter_specs()) params += shape_numel(p.shape);
      rows.push_back({c.name, c.layer->kind(), shape, params, 1});
      for (SubLayerRow inner : c.layer->sublayer_rows()) {
        inner.name = c.name + "." + inner.name;
        inner.depth += 1;
        rows.push_back(std::move(inner));
      }
    }
  }
  return rows;
}

Shape Residual::output_sample_shape(const Shape& input_sample_shape) const {
  MIRROR_CHECK(input_sample_shape == input_, kInvalidArgument,
               "residual block built for samples of shape " << to_string(input_) << " cannot take "
                                                            << to_string(input_sample_shape));
  return output_;
}

std::vector<ParamSpec> Residual::parameter_specs() const {
  std::vector<ParamSpec> specs;
  for (const Child* c : children())
    for (ParamSpec p : c->layer->parameter_specs())
      specs.push_back({c->name + "." + p.name, std::move(p.shape), p.normalization});
  return specs;
}

void Residual::bind_parameters(std::span<const ParamBinding> bindings) {
  for (Child* c : children()) c->layer->bind_parameters(bindings.subspan(c->first_param, c->params));
}

void Residual::init_parameter(std::size_t local_index, std::span<float> values, std::uint64_t seed) const {
  for (const Child* c : children())
    if (local_index >= c->first_param && local_index < c->first_param + c->params)
      return c->layer->init_parameter(local_index - c->first_param, values, seed);
}

std::vector<BufferSpec> Residual::buffer_specs() const {
  std::vector<BufferSpec> specs;
  for (const Child* c : children())
    for (BufferSpec b : c->layer->buffer_specs()) specs.push_back({c->name + "." + b.name, std::move(b.shape), b.initial_value});
  return specs;
}

void Residual::bind_buffers(std::span<float* const> buffers) {
  for (Child* c : children())
    if (c->buffers > 0) c->layer->bind_buffers(buffers.subspan(c->first_buffer, c->buffers));
}

const Tensor& Residual::run_chain(std::vector<Child>& chain, const Tensor& x) {
  const Tensor* h = &x;
  for (Child& c : chain) {
    c.layer->set_training(training());
    c.layer->set_forward_context(context_);
    h = &c.layer->forward(c.bridge->input(*h, c.layer->accepts_blocked()));
  }
  return *h;
}

const Tensor& Residual::forward(const Tensor& x) {
  x_ = &x;
  allow_blocked(body_, blocked_output_);  // each branch's last layer as the model allows the block
  allow_blocked(shortcut_, blocked_output_);
  const Tensor& body = run_chain(body_, x);
  const Tensor* shortcut = &run_chain(shortcut_, x);
  MIRROR_CHECK(body.numel() == shortcut->numel(), kInternal,
               "residual branches gave " << to_string(body.shape()) << " and " << to_string(shortcut->shape()));
  x_layout_ = x.layout();
  shortcut_layout_ = shortcut->layout();
  if (shortcut_layout_ != body.layout()) {
    to_body_->run(*shortcut, body.layout(), shortcut_y_);
    shortcut = &shortcut_y_;
  }
  y_.resize(body.shape());
  normalised_body_ = body_hand_over_ && body_hand_over_->pending;  // body is the BatchNorm's input
  if (normalised_body_) {
    normalise_add_cpu(body, body_hand_over_->affine, shortcut->data(), relu_after_, y_.data());
    y_.set_layout(body.layout());
  } else if (device_.is_cpu()) {
    (relu_after_ ? add_relu_cpu : add_cpu)(body.data(), shortcut->data(), y_.data(), y_.numel());
    y_.set_layout(body.layout());
  } else {
    copy_device_to_device(device_, y_.data(), body.data(), static_cast<std::size_t>(body.numel()) * sizeof(float));
    ops::axpy(device_, y_.numel(), 1.0f, shortcut->data(), y_.data());
  }
  return y_;
}

const Tensor* Residual::backward_chain(std::vector<Child>& chain, const Tensor& dy, GradMode mode, bool need_dx,
                                       const LayerGradReady& grad_ready) {
  const Tensor* d = &dy;
  for (std::size_t i = chain.size(); i-- > 0;) {
    Child& c = chain[i];
    LayerGradReady ready;
    if (grad_ready) ready = [&grad_ready, base = c.first_param](std::size_t local) { grad_ready(base + local); };
    d = c.bridge->gradient(c.layer->backward(*d, mode, i > 0 || need_dx, ready));
  }
  return d;
}

const Tensor& Residual::masked_by_relu(const Tensor& dy) {
  dy_masked_.resize(dy.shape());
  dy_masked_.set_layout(dy.layout());
  ops::relu_backward(device_, y_.data(), dy.data(), dy_masked_.data(), dy.numel());
  return dy_masked_;
}

const Tensor* Residual::backward(const Tensor& dy_in, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(dy_in.numel() == y_.numel(), kInvalidArgument,
               "residual backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy_in.shape()));
  MIRROR_CHECK(dy_in.layout() == y_.layout(), kInternal,
               "residual backward expects dy in layout " << to_string(y_.layout()) << ", got " << to_string(dy_in.layout()));
  const Tensor& dy = relu_after_ ? masked_by_relu(dy_in) : dy_in;
  const Tensor* dy_shortcut = &dy;
  if (shortcut_layout_ != dy.layout()) {
    to_shortcut_->run(dy, shortcut_layout_, shortcut_dy_);
    dy_shortcut = &shortcut_dy_;
  }
  // The shortcut's parameters come after the body's: its gradients first, for decreasing indices. Both dx are in
  // x's layout, and the body's backward writes only buffers of its own layers, so d_shortcut stays valid.
  const Tensor* d_shortcut = backward_chain(shortcut_, *dy_shortcut, mode, need_dx, grad_ready);
  const Tensor* d_body = backward_chain(body_, dy, mode, need_dx, grad_ready);
  if (!need_dx) return nullptr;
  MIRROR_CHECK(d_body->layout() == d_shortcut->layout(), kInternal,
               "residual branches gave dx in layouts " << to_string(d_body->layout()) << " and "
                                                       << to_string(d_shortcut->layout()));
  dx_.resize(d_body->shape());
  if (device_.is_cpu()) {
    add_cpu(d_body->data(), d_shortcut->data(), dx_.data(), dx_.numel());
    dx_.set_layout(x_layout_);
  } else {
    copy_device_to_device(device_, dx_.data(), d_shortcut->data(), static_cast<std::size_t>(dx_.numel()) * sizeof(float));
    ops::axpy(device_, dx_.numel(), 1.0f, d_body->data(), dx_.data());
  }
  return &dx_;
}

}  // namespace mirror::nn
