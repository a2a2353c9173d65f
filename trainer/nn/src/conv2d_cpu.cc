// conv2d_cpu.cc — Conv2d's CPU kernels (conv2d_kernels.h) through oneDNN's convolution primitives: forward,
// backward data, backward weights + bias. Weights stay OIHW in Mirror's buffers. A layer whose shape profits
// lets oneDNN pick blocked layouts (format_tag::any, so the ISA decides: nChw8c on AVX2, nChw16c on AVX-512);
// x comes NCHW or blocked (from the layer before), and y is left in oneDNN's blocked layout when the model allows
// it (Conv2dProblem::blocked_output), else reordered to NCHW. Reorders only where the layouts differ.
// kAccumulate: oneDNN overwrites its outputs, so the gradients go to scratch first and are added. The algorithm
// is direct, or Winograd where asked for (cpu_conv_algorithm) and oneDNN has it for the problem. With bfloat16
// compute (Conv2dProblem::bf16) the three read x, w and dy as bfloat16 (the staging reorders round them) and write
// float32, where oneDNN has kernels for that (Winograd has none: direct then), else float32.
#include <string>
#include <tuple>
#include <vector>

#include "conv2d_kernels.h"
#include "dnnl_cpu.h"
#include "mirror/error.h"
#include "mirror/nn/cpu_kernels.h"

namespace mirror::nn::detail {
namespace {

namespace dc = dnnl_cpu;

// Whether to let oneDNN choose blocked layouts (nChw8c and the like, its direct JIT kernels) and pay the
// reorders from and to NCHW around each primitive, or keep everything plain (its im2col + GEMM kernels).
// Blocked is ahead for kernels larger than 1×1 over 8 or more input channels, reorders included (mirror-layer-bench,
// docs/compute.md); plain is ahead with fewer channels, which a block would pad (an image model's first layer: it
// takes plain x and blocked y, first_layer below), and for 1×1 kernels (a plain GEMM without im2col: resnet's
// projections).
bool blocked_layouts(const Conv2dGeometry& g) { return g.in_channels >= 8 && g.kernel_h * g.kernel_w > 1; }

// The Mirror layout that is exactly `md` (a blocked one only when the channels fill the blocks), else kNchw.
Layout layout_of(const dnnl::memory::desc& md, const dc::dims& d) {
  for (Layout l : {Layout::kNChw8c, Layout::kNChw16c})
    if (d[1] % channel_block(l) == 0 && md == dc::plain(d, dc::tag_of(l))) return l;
  return Layout::kNchw;
}

class OneDnnConv2d final : public Conv2dKernels {
 public:
  explicit OneDnnConv2d(const Conv2dProblem& p) : has_bias_(p.bias) { dc::run("conv2d", [&] { build(p); }); }

  Layout y_layout() const override { return y_layout_; }
  std::string implementation() const override { return implementation_; }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    dc::run("conv2d forward", [&] {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, fwd_src_.input(x)},
                                                 {DNNL_ARG_WEIGHTS, fwd_weights_.input(w)},
                                                 {DNNL_ARG_DST, fwd_dst_.output(y)}};
      if (has_bias_) args.emplace(DNNL_ARG_BIAS, dc::wrap(bias_md_, b));
      dc::execute(forward_, args);
      fwd_dst_.finish_output(y);
    });
  }

  void backward_weights(const float* x, const float* dy, float* dw, float* db, bool accumulate) override {
    float* dw_out = dw;
    float* db_out = db;
    if (accumulate) {
      dw_scratch_.resize(weight_numel_);
      dw_out = dw_scratch_.data();
      if (has_bias_) {
        db_scratch_.resize(out_channels_);
        db_out = db_scratch_.data();
      }
    }
    dc::run("conv2d backward weights", [&] {
      // x is unchanged since forward (the Layer contract): its blocked copy is reused when the layouts agree.
      const bool reuse_x = same_copy(fwd_src_, bww_src_);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, reuse_x ? fwd_src_.staged() : bww_src_.input(x)},
                                                 {DNNL_ARG_DIFF_DST, bww_dy_.input(dy)},
                                                 {DNNL_ARG_DIFF_WEIGHTS, bww_dw_.output(dw_out)}};
      if (has_bias_) args.emplace(DNNL_ARG_DIFF_BIAS, dc::wrap(bias_md_, db_out));
      dc::execute(backward_weights_, args);
      bww_dw_.finish_output(dw_out);
    });
    if (accumulate) {
      add(dw_scratch_, dw);
      if (has_bias_) add(db_scratch_, db);
    }
  }

  void backward_data(const float* dy, const float* w, float* dx) override {
    dc::run("conv2d backward data", [&] {
      // dy was staged by backward_weights, w by forward (parameters do not change in between).
      const std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_DIFF_DST, same_copy(bww_dy_, bwd_dy_) ? bww_dy_.staged() : bwd_dy_.input(dy)},
          {DNNL_ARG_WEIGHTS, same_copy(fwd_weights_, bwd_weights_) ? fwd_weights_.staged() : bwd_weights_.input(w)},
          {DNNL_ARG_DIFF_SRC, bwd_dx_.output(dx)}};
      dc::execute(backward_data_, args);
      bwd_dx_.finish_output(dx);
    });
  }

 private:
  static bool same_copy(const dc::Staged& a, const dc::Staged& b) {
    return a.copies() && b.copies() && a.staged().get_desc() == b.staged().get_desc();
  }
  static void add(const std::vector<float>& from, float* to) {
    const float* __restrict f = from.data();
    float* __restrict t = to;
    for (std::size_t i = 0; i < from.size(); ++i) t[i] += f[i];
  }

  void build(const Conv2dProblem& p) {
    const Conv2dGeometry& g = p.geometry;
    out_channels_ = g.out_channels;
    weight_numel_ = static_cast<std::size_t>(g.out_channels * g.in_channels * g.kernel_h * g.kernel_w);
    const dc::dims src_dims(p.x_shape.begin(), p.x_shape.end()), dst_dims(p.y_shape.begin(), p.y_shape.end()),
        w_dims{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
    // src: x as it comes; dst: NCHW until the primitive shows which layout it wants.
    const auto src = dc::plain(src_dims, dc::tag_of(p.x_layout)), weights = dc::plain(w_dims, dc::tag::oihw);
    auto dst = dc::plain(dst_dims, dc::tag::nchw);
    const bool blocked = p.layout == ConvLayout::kBlocked ||
                         (p.layout == ConvLayout::kAuto && (blocked_layouts(g) || p.x_layout != Layout::kNchw));
    const auto any = [&](const dc::dims& d, const dnnl::memory::desc& plain) {
      return blocked ? dc::plain(d, dc::tag::any) : plain;
    };
    const bool first = first_layer(p, blocked);
    const auto src_a = any(src_dims, dc::plain(src_dims, dc::tag::nchw)),
               w_a = first ? dc::plain(w_dims, dc::tag::any) : any(w_dims, weights),
               dst_a = first ? dc::plain(dst_dims, dc::tag::any) : any(dst_dims, dst);
    bias_md_ = dc::plain({g.out_channels}, dc::tag::x);
    const dnnl::memory::desc no_bias;
    const dnnl::memory::desc& bias = has_bias_ ? bias_md_ : no_bias;
    // Symmetric padding as PyTorch's: oneDNN sizes the output (in + pl + pr − k) / s + 1 rounded down, as
    // Conv2d::output_sample_shape does, so rows the last window does not reach are simply unused.
    const dc::dims strides{g.stride_h, g.stride_w}, pad{g.pad_h, g.pad_w};
    const auto choose = [&](dnnl::memory::data_type operands) {
      const Operands a{src_a, w_a, dst_a, operands};
      PrimitiveDescs d = winograd_wanted(g, blocked)
                             ? winograd_or_direct(a, bias, strides, pad)
                             : primitive_descs(dnnl::algorithm::convolution_direct, a, bias, strides, pad);
      if (first && any_reference_kernel(d))
        d = primitive_descs(dnnl::algorithm::convolution_direct, {src_a, weights, dst, operands}, bias, strides, pad);
      return d;
    };
    // bfloat16 operands where oneDNN has kernels for them, else float32 (the implementation names which).
    PrimitiveDescs descs = choose(p.bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32);
    if (p.bf16 && any_reference_kernel(descs)) descs = choose(dnnl::memory::data_type::f32);
    const auto& [fwd_pd, bwd_pd, bww_pd] = descs;
    implementation_ = std::string(fwd_pd.impl_info_str()) + " / " + bwd_pd.impl_info_str() + " / " +
                      bww_pd.impl_info_str();
    if (fwd_pd.src_desc().data_type() == dnnl::memory::data_type::bf16) implementation_ += " (bf16 operands)";
    y_layout_ = p.blocked_output ? layout_of(fwd_pd.dst_desc(), dst_dims) : Layout::kNchw;
    dst = dc::plain(dst_dims, dc::tag_of(y_layout_));
    forward_ = dnnl::convolution_forward(fwd_pd);
    backward_data_ = dnnl::convolution_backward_data(bwd_pd);
    backward_weights_ = dnnl::convolution_backward_weights(bww_pd);
    fwd_src_ = dc::Staged(src, fwd_pd.src_desc());
    fwd_weights_ = dc::Staged(weights, fwd_pd.weights_desc());
    fwd_dst_ = dc::Staged(dst, fwd_pd.dst_desc());
    bww_src_ = dc::Staged(src, bww_pd.src_desc());
    bww_dy_ = dc::Staged(dst, bww_pd.diff_dst_desc());
    bww_dw_ = dc::Staged(weights, bww_pd.diff_weights_desc());
    bwd_dy_ = dc::Staged(dst, bwd_pd.diff_dst_desc());
    bwd_weights_ = dc::Staged(weights, bwd_pd.weights_desc());
    bwd_dx_ = dc::Staged(src, bwd_pd.diff_src_desc());
  }

  using PrimitiveDescs = std::tuple<dnnl::convolution_forward::primitive_desc,
                                    dnnl::convolution_backward_data::primitive_desc,
                                    dnnl::convolution_backward_weights::primitive_desc>;

  // The float32 descriptors of x, w and y, and the type the products read them in (f32, or bf16: x, w and dy
  // rounded to bfloat16 by the reorders that stage them, while y, dx, dw and the bias stay float32).
  struct Operands {
    dnnl::memory::desc src, weights, dst;
    dnnl::memory::data_type type;
  };
  static dnnl::memory::desc retyped(const dnnl::memory::desc& md, dnnl::memory::data_type type) {
    if (md.data.format_kind == dnnl_format_kind_any) return dnnl::memory::desc(md.dims(), type, dc::tag::any);
    dnnl::memory::desc r = md;  // a plain or blocked layout: strides count elements, whatever their type
    r.data.data_type = static_cast<dnnl_data_type_t>(type);
    return r;
  }

  static PrimitiveDescs primitive_descs(dnnl::algorithm algo, const Operands& o, const dnnl::memory::desc& bias,
                                        const dc::dims& strides, const dc::dims& pad) {
    const auto src = retyped(o.src, o.type), w = retyped(o.weights, o.type), dy = retyped(o.dst, o.type);
    const auto fwd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, src, w, bias, o.dst, strides, pad,
                                        pad),
        dc::engine());
    const auto bwd = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(algo, o.src, w, dy, strides, pad, pad), dc::engine(), fwd);
    const auto bww = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(algo, src, o.weights, bias, dy, strides, pad, pad), dc::engine(), fwd);
    return {fwd, bwd, bww};
  }

  // An image model's first layer (fewer than 8 input channels, a k×k kernel, x NCHW, layouts left to the layer):
  // x stays NCHW and oneDNN picks the layouts of the weights and of y, which lets it take its first-layer direct
  // kernels (plain x in, blocked y out) instead of im2col + GEMM on plain layouts, whose inner dimension is only
  // k·k for one channel; on AVX2 backward weights stays GEMM (docs/compute.md). y is blocked only where the model
  // lets it be.
  static bool first_layer(const Conv2dProblem& p, bool blocked) {
    const Conv2dGeometry& g = p.geometry;
    return p.layout == ConvLayout::kAuto && !blocked && g.kernel_h * g.kernel_w > 1 && p.x_layout == Layout::kNchw;
  }
  // Whether oneDNN would run any of the three on a reference (non-JIT) kernel: then the layer keeps the plain
  // layouts of its GEMM kernels.
  static bool any_reference_kernel(const PrimitiveDescs& d) {
    const auto ref = [](const char* impl) { return std::string(impl).rfind("ref", 0) == 0; };
    return ref(std::get<0>(d).impl_info_str()) || ref(std::get<1>(d).impl_info_str()) ||
           ref(std::get<2>(d).impl_info_str());
  }

  // oneDNN 2.6's Winograd kernels are 3×3, stride 1, on blocked layouts only; where it still has none for this
  // problem (another ISA, a shape it refuses) it says so by refusing the descriptor, and the layer computes direct.
  static bool winograd_wanted(const Conv2dGeometry& g, bool blocked) {
    return cpu_conv_algorithm() == CpuConvAlgorithm::kWinograd && blocked && g.kernel_h == 3 && g.kernel_w == 3 &&
           g.stride_h == 1 && g.stride_w == 1;
  }
  static PrimitiveDescs winograd_or_direct(const Operands& o, const dnnl::memory::desc& bias, const dc::dims& strides,
                                           const dc::dims& pad) {
    try {
      return primitive_descs(dnnl::algorithm::convolution_winograd, o, bias, strides, pad);
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;
      return primitive_descs(dnnl::algorithm::convolution_direct, o, bias, strides, pad);
    }
  }

  bool has_bias_;
  std::string implementation_;
  Layout y_layout_ = Layout::kNchw;
  std::int64_t out_channels_ = 0;
  std::size_t weight_numel_ = 0;
  dnnl::memory::desc bias_md_;
  dnnl::convolution_forward forward_;
  dnnl::convolution_backward_data backward_data_;
  dnnl::convolution_backward_weights backward_weights_;
  // Each primitive's view of its tensors: Mirror's plain buffers, or blocked copies (see blocked_layouts).
  dc::Staged fwd_src_, fwd_weights_, fwd_dst_;
  dc::Staged bww_src_, bww_dy_, bww_dw_;
  dc::Staged bwd_dy_, bwd_weights_, bwd_dx_;
  std::vector<float> dw_scratch_, db_scratch_;
};

}  // namespace

std::unique_ptr<Conv2dKernels> make_conv2d_cpu(const Conv2dProblem& problem) {
  return std::make_unique<OneDnnConv2d>(problem);
}

}  // namespace mirror::nn::detail
