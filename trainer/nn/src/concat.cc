// concat.cc — mirror/nn/concat.h: each input's rows copied into its columns of the output (and dy's columns
// back out) with one strided copy per input (tensor.h's copy_rows_device_to_device, either device).
#include "mirror/nn/concat.h"

#include "mirror/error.h"
#include "mirror/nn/layer_registry.h"

namespace mirror::nn {

std::unique_ptr<Layer> Concat::create(const LayerArgs& args) { return std::make_unique<Concat>(args.device); }

Shape Concat::output_sample_shape_of(std::span<const Shape> inputs) const {
  check_input_count(inputs.size());
  const Shape& first = inputs[0];
  MIRROR_CHECK(first.size() >= 1 && first.size() <= 3, kInvalidArgument,
               "concat joins samples of shape [F], [T, C] or [C, H, W], got " << to_string(first));
  const std::size_t axis = feature_axis(first);
  Shape out = first;
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    bool fits = inputs[k].size() == first.size();
    for (std::size_t d = 0; fits && d < first.size(); ++d) fits = d == axis || inputs[k][d] == first[d];
    MIRROR_CHECK(fits, kInvalidArgument,
                 "concat joins along axis " << axis << " of the sample; the other dimensions must match, got "
                                            << to_string(first) << " (input 1) and " << to_string(inputs[k])
                                            << " (input " << k + 1 << ")");
    out[axis] += inputs[k][axis];
  }
  return out;
}

Concat::Slabs Concat::slabs_of(const Shape& first, const std::vector<Shape>& batch_shapes) const {
  // Batch shapes [N, sample...]: the axis in the batch shape is the sample's axis + 1.
  const Shape sample(first.begin() + 1, first.end());
  const std::size_t axis = feature_axis(sample) + 1;
  Slabs s;
  s.rows = 1;
  for (std::size_t d = 0; d < axis; ++d) s.rows *= static_cast<std::size_t>(first[d]);
  for (const Shape& shape : batch_shapes) {
    std::size_t width = 1;
    for (std::size_t d = axis; d < shape.size(); ++d) width *= static_cast<std::size_t>(shape[d]);
    s.widths.push_back(width);
    s.total += width;
  }
  return s;
}

const Tensor& Concat::forward_inputs(std::span<const Tensor* const> xs) {
  input_shapes_.clear();
  std::vector<Shape> samples;
  for (const Tensor* x : xs) {
    MIRROR_CHECK(x->device() == device_ && !x->blocked() && x->shape().size() >= 2, kInvalidArgument,
                 "concat on " << to_string(device_) << " takes plain batches [N, ...] on its device, got "
                              << to_string(x->shape()) << " on " << to_string(x->device()));
    MIRROR_CHECK(x->dim(0) == xs[0]->dim(0), kInvalidArgument,
                 "concat inputs have batches of " << xs[0]->dim(0) << " and " << x->dim(0) << " samples");
    input_shapes_.push_back(x->shape());
    samples.emplace_back(x->shape().begin() + 1, x->shape().end());
  }
  Shape out = output_sample_shape_of(samples);
  out.insert(out.begin(), xs[0]->dim(0));
  y_.resize(out);
  const Slabs s = slabs_of(input_shapes_[0], input_shapes_);
  std::size_t column = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    copy_rows_device_to_device(device_, y_.data() + column, s.total * sizeof(float), xs[k]->data(),
                               s.widths[k] * sizeof(float), s.widths[k] * sizeof(float), s.rows);
    column += s.widths[k];
  }
  return y_;
}

std::vector<const Tensor*> Concat::backward_inputs(const Tensor& dy, GradMode, bool need_dx, const LayerGradReady&) {
  MIRROR_CHECK(dy.shape() == y_.shape(), kInvalidArgument,
               "concat backward expects dy of shape " << to_string(y_.shape()) << ", got " << to_string(dy.shape()));
  std::vector<const Tensor*> dxs(input_shapes_.size(), nullptr);
  if (!need_dx) return dxs;
  while (dx_.size() < input_shapes_.size()) dx_.emplace_back(Shape{0}, device_);
  const Slabs s = slabs_of(input_shapes_[0], input_shapes_);
  std::size_t column = 0;
  for (std::size_t k = 0; k < input_shapes_.size(); ++k) {
    dx_[k].resize(input_shapes_[k]);
    copy_rows_device_to_device(device_, dx_[k].data(), s.widths[k] * sizeof(float), dy.data() + column,
                               s.total * sizeof(float), s.widths[k] * sizeof(float), s.rows);
    column += s.widths[k];
    dxs[k] = &dx_[k];
  }
  return dxs;
}

}  // namespace mirror::nn
