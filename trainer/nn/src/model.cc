// model.cc — mirror/nn/model.h: builds the layer chain from the spec, lays the parameters out in one
// flat buffer (and the gradients in another, same layout) and the layers' buffers in a third, runs forward
// and backward through the layers.
#include "mirror/nn/model.h"

#include <algorithm>

#include "chain_fusion.h"
#include "init.h"
#include "layout_bridge.h"
#include "mirror/error.h"
#include "mirror/nn/activation.h"
#include "mirror/nn/linear.h"
#include "mirror/nn/ops.h"

namespace mirror::nn {

namespace {
// The one place that turns a spec into layers; a new model kind adds a branch here.
void build_layers(const ModelSpec& spec, std::int64_t in, std::int64_t classes, Device device,
                  std::vector<std::unique_ptr<Layer>>& layers, std::vector<std::string>& names) {
  MIRROR_CHECK(spec.kind == "mlp", kInvalidArgument, "model kind '" << spec.kind << "' is not supported");
  std::int64_t width = in;
  int index = 1;
  for (std::int64_t h : spec.hidden) {
    MIRROR_CHECK(h >= 1, kInvalidArgument, "model '" << spec.to_string() << "': hidden size " << h << " < 1");
    layers.push_back(std::make_unique<Linear>(width, h, device));
    names.push_back("fc" + std::to_string(index));
    layers.push_back(std::make_unique<ReLU>(device));
    names.push_back("relu" + std::to_string(index));
    width = h;
    ++index;
  }
  layers.push_back(std::make_unique<Linear>(width, classes, device));
  names.push_back("fc" + std::to_string(index));
}
}  // namespace

Shape model_sample_shape(const Shape& sample_shape) {
  MIRROR_CHECK(!sample_shape.empty() && sample_shape.size() <= 3, kInvalidArgument,
               "a sample shape has 1 to 3 dimensions ([features], [H, W] or [C, H, W]), got "
                   << to_string(sample_shape));
  for (std::int64_t d : sample_shape)
    MIRROR_CHECK(d >= 1, kInvalidArgument, "sample shape " << to_string(sample_shape) << " has a dimension < 1");
  if (sample_shape.size() == 2) return {1, sample_shape[0], sample_shape[1]};
  return sample_shape;
}

Model::Model(const ModelSpec& spec, Shape input_sample_shape, std::int64_t num_classes, Device device)
    : spec_(spec), description_(spec.to_string()), input_shape_(model_sample_shape(input_sample_shape)),
      classes_(num_classes), device_(device), params_(device, 0), grads_(device, 0), buffers_(device, 0) {
  MIRROR_CHECK(num_classes >= 2, kInvalidArgument, "model needs at least 2 classes, got " << num_classes);
  build_layers(spec_, shape_numel(input_shape_), classes_, device_, layers_, layer_names_);
  lay_out();
}

Model::Model(std::vector<NamedLayer> layers, Shape input_sample_shape, std::int64_t num_classes, Device device,
             std::string description)
    : description_(std::move(description)), input_shape_(model_sample_shape(input_sample_shape)),
      classes_(num_classes), device_(device), params_(device, 0), grads_(device, 0), buffers_(device, 0) {
  MIRROR_CHECK(num_classes >= 2, kInvalidArgument, "model needs at least 2 classes, got " << num_classes);
  MIRROR_CHECK(!layers.empty(), kInvalidArgument, "model '" << description_ << "' has no layers");
  for (NamedLayer& l : layers) {
    MIRROR_CHECK(l.layer != nullptr, kInvalidArgument, "model '" << description_ << "': layer " << l.name << " is null");
    layer_names_.push_back(std::move(l.name));
    layers_.push_back(std::move(l.layer));
  }
  lay_out();
}

void Model::lay_out() {
  Shape shape = input_shape_;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    shape = layers_[l]->output_sample_shape(shape);
    output_shapes_.push_back(shape);
    first_param_.push_back(infos_.size());
    for (const ParamSpec& p : layers_[l]->parameter_specs()) {
      const std::int64_t n = shape_numel(p.shape);
      infos_.push_back({layer_names_[l] + "." + p.name, p.shape, total_, n, p.normalization});
      total_ += n;
    }
  }
  MIRROR_CHECK(shape_numel(shape) == classes_, kInvalidArgument,
               "model '" << description_ << "' ends in samples of shape " << to_string(shape) << ", not the "
                         << classes_ << " class scores its data needs");
  first_param_.push_back(infos_.size());
  std::vector<Layer*> chain;
  for (auto& layer : layers_) chain.push_back(layer.get());
  detail::fuse_chain(chain);
  for (std::size_t l = 0; l <= layers_.size(); ++l) bridges_.push_back(std::make_unique<detail::LayoutBridge>());
  for (std::size_t l = 0; l < layers_.size(); ++l)
    layers_[l]->set_blocked_output(l + 1 < layers_.size() && layers_[l + 1]->accepts_blocked());

  params_.reserve(static_cast<std::size_t>(total_) * sizeof(float));
  grads_.reserve(static_cast<std::size_t>(total_) * sizeof(float));
  bind_layers();
  zero_grad();
  lay_out_buffers();
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
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    std::vector<ParamBinding> bindings;
    for (std::size_t i = first_param_[l]; i < first_param_[l + 1]; ++i)
      bindings.push_back({params() + infos_[i].offset, grads() + infos_[i].offset});
    layers_[l]->bind_parameters(bindings);
  }
}

void Model::use_gradient_memory(float* memory) { adopt_memory(grad_memory_, grads(), memory, "use_gradient_memory"); }

void Model::use_parameter_memory(float* memory) {
  adopt_memory(param_memory_, params(), memory, "use_parameter_memory");
}

void Model::adopt_memory(float*& slot, const float* current, float* memory, const char* what) {
  MIRROR_CHECK(!device_.is_cuda(), kInvalidArgument, what << ": host memory for a CUDA model");
  MIRROR_CHECK(memory != nullptr, kInvalidArgument, what << ": null memory");
  std::copy(current, current + total_, memory);
  slot = memory;
  bind_layers();
}

Model::Model(std::string_view spec, Shape input_sample_shape, std::int64_t num_classes, Device device)
    : Model(ModelSpec::parse(spec), std::move(input_sample_shape), num_classes, device) {}

Model::Model(std::string_view spec, std::int64_t input_features, std::int64_t num_classes, Device device)
    : Model(ModelSpec::parse(spec), Shape{input_features}, num_classes, device) {}

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
  MIRROR_CHECK(!x.shape().empty() && x.dim(0) >= 1 && x.numel() == x.dim(0) * in, kInvalidArgument,
               "model expects input [batch, " << in << "], got " << to_string(x.shape()));
  MIRROR_CHECK(context.sample_ids.empty() || static_cast<std::int64_t>(context.sample_ids.size()) == x.dim(0),
               kInvalidArgument, "forward context has " << context.sample_ids.size() << " sample ids for a batch of "
                                                        << x.dim(0));
  batch_ = x.dim(0);
  context_ = context;
  const Tensor* h = &x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    layers_[l]->set_forward_context(&context_);
    h = &layers_[l]->forward(bridges_[l]->input(*h, layers_[l]->accepts_blocked()));
  }
  return bridges_.back()->input(*h, false);
}

void Model::backward(const Tensor& dlogits, GradMode mode, const GradReadyFn& on_grad_ready) {
  MIRROR_CHECK(batch_ >= 1, kInvalidArgument, "model backward called before forward");
  MIRROR_CHECK(dlogits.device() == device_ && dlogits.numel() == batch_ * classes_, kInvalidArgument,
               "model backward expects dlogits [" << batch_ << ", " << classes_ << "] on " << to_string(device_)
                                                  << ", got " << to_string(dlogits.shape()) << " on "
                                                  << to_string(dlogits.device()));
  const Tensor* dy = bridges_.back()->gradient(&dlogits);
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const bool need_dx = first_param_[l] > 0;  // some earlier layer has parameters
    const std::size_t base = first_param_[l];
    LayerGradReady ready;
    if (on_grad_ready) ready = [&](std::size_t local) { on_grad_ready(base + local); };
    dy = bridges_[l]->gradient(layers_[l]->backward(*dy, mode, need_dx, ready));
    if (!need_dx) break;
  }
}

}  // namespace mirror::nn
