// residual.cc — mirror/nn/residual.h: two chains over one input, their outputs added (copy + axpy), their
// parameters and buffers concatenated body first.
#include "mirror/nn/residual.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {
namespace {

std::vector<NamedLayer> build_chain(const std::vector<LayerDescription>& layers, Shape& shape, const LayerArgs& args,
                                    const std::string& prefix) {
  std::vector<NamedLayer> chain;
  for (const LayerDescription& d : layers) {
    auto layer = make_layer(d, shape, args.device, args.classes, prefix);
    shape = layer->output_sample_shape(shape);
    chain.push_back({d.name, std::move(layer)});
  }
  return chain;
}

}  // namespace

Residual::Residual(std::vector<NamedLayer> body, std::vector<NamedLayer> shortcut, Shape input, Device device,
                   const std::string& name)
    : input_(std::move(input)), device_(device), y_({0}, device), dx_({0}, device) {
  MIRROR_CHECK(!body.empty(), kInvalidArgument, "residual block '" << name << "' has an empty body");
  Shape body_out = input_, shortcut_out = input_;
  for (NamedLayer& l : body) {
    body_out = l.layer->output_sample_shape(body_out);
    body_.push_back({"body." + l.name, std::move(l.layer)});
  }
  for (NamedLayer& l : shortcut) {
    shortcut_out = l.layer->output_sample_shape(shortcut_out);
    shortcut_.push_back({"shortcut." + l.name, std::move(l.layer)});
  }
  MIRROR_CHECK(body_out == shortcut_out, kInvalidArgument,
               "residual block '" << name << "': the body gives samples of shape " << to_string(body_out)
                                  << " but the shortcut " << to_string(shortcut_out)
                                  << (shortcut_.empty() ? " (the identity)" : "")
                                  << "; they must match to be added");
  output_ = body_out;
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

std::unique_ptr<Layer> Residual::create(const LayerArgs& args) {
  const std::string prefix = args.description.name + ".";
  Shape body_shape = args.input, shortcut_shape = args.input;
  auto body = build_chain(args.description.body, body_shape, args, prefix + "body.");
  auto shortcut = build_chain(args.description.shortcut, shortcut_shape, args, prefix + "shortcut.");
  return std::make_unique<Residual>(std::move(body), std::move(shortcut), args.input, args.device,
                                    args.description.name);
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
    h = &c.layer->forward(*h);
  }
  return *h;
}

const Tensor& Residual::forward(const Tensor& x) {
  const Tensor& body = run_chain(body_, x);
  const Tensor& shortcut = run_chain(shortcut_, x);
  MIRROR_CHECK(body.numel() == shortcut.numel(), kInternal,
               "residual branches gave " << to_string(body.shape()) << " and " << to_string(shortcut.shape()));
  y_.resize(body.shape());
  copy_device_to_device(device_, y_.data(), body.data(), static_cast<std::size_t>(body.numel()) * sizeof(float));
  ops::axpy(device_, y_.numel(), 1.0f, shortcut.data(), y_.data());
  return y_;
}

const Tensor* Residual::backward_chain(std::vector<Child>& chain, const Tensor& dy, GradMode mode, bool need_dx,
                                       const LayerGradReady& grad_ready) {
  const Tensor* d = &dy;
  for (std::size_t i = chain.size(); i-- > 0;) {
    Child& c = chain[i];
    LayerGradReady ready;
    if (grad_ready) ready = [&grad_ready, base = c.first_param](std::size_t local) { grad_ready(base + local); };
    d = c.layer->backward(*d, mode, i > 0 || need_dx, ready);
  }
  return d;
}

const Tensor* Residual::backward(const Tensor& dy, GradMode mode, bool need_dx, const LayerGradReady& grad_ready) {
  MIRROR_CHECK(dy.numel() == y_.numel(), kInvalidArgument,
               "residual backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  // The shortcut's parameters come after the body's: its gradients first, for decreasing indices.
  const Tensor* d_shortcut = backward_chain(shortcut_, dy, mode, need_dx, grad_ready);
  if (need_dx) {  // keep the shortcut's dx: the body's backward may reuse buffers of its own only
    dx_.resize(d_shortcut->shape());
    copy_device_to_device(device_, dx_.data(), d_shortcut->data(), static_cast<std::size_t>(dx_.numel()) * sizeof(float));
  }
  const Tensor* d_body = backward_chain(body_, dy, mode, need_dx, grad_ready);
  if (!need_dx) return nullptr;
  ops::axpy(device_, dx_.numel(), 1.0f, d_body->data(), dx_.data());
  return &dx_;
}

}  // namespace mirror::nn
