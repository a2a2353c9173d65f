// pool2d_cpu.cc — Pool2d's CPU kernels (pool2d_kernels.h): oneDNN pooling forward (training keeps max
// pooling's workspace, the index of each window's winner) and backward, over plain NCHW buffers.
#include "dnnl_cpu.h"
#include "mirror/error.h"
#include "pool2d_kernels.h"

namespace mirror::nn::detail {
namespace {

namespace dc = dnnl_cpu;

class OneDnnPool2d final : public Pool2dKernels {
 public:
  explicit OneDnnPool2d(const Pool2dProblem& p) { dc::run("pooling", [&] { build(p); }); }

  void forward(const float* x, float* y) override {
    dc::run("pooling forward", [&] {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dc::wrap(src_, x)}, {DNNL_ARG_DST, dc::wrap(dst_, y)}};
      if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
      dc::execute(forward_, args);
    });
  }

  void backward(const float* x, const float* y, const float* dy, float* dx) override {
    dc::run("pooling backward", [&] {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, dc::wrap(dst_, dy)},
                                                 {DNNL_ARG_DIFF_SRC, dc::wrap(src_, dx)}};
      if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
      dc::execute(backward_, args);
    });
  }

 private:
  void build(const Pool2dProblem& p) {
    src_ = dc::plain(dc::dims(p.x_shape.begin(), p.x_shape.end()), dc::tag::nchw);
    dst_ = dc::plain(dc::dims(p.y_shape.begin(), p.y_shape.end()), dc::tag::nchw);
    const auto algo =
        p.mode == PoolMode::kMax ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
    const Pool2dWindow& w = p.window;
    const dc::dims kernel{w.kernel_h, w.kernel_w}, strides{w.stride_h, w.stride_w}, pad{w.pad_h, w.pad_w};
    const auto prop = p.training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    const auto fwd_pd = dnnl::pooling_forward::primitive_desc(
        dnnl::pooling_forward::desc(prop, algo, src_, dst_, strides, kernel, pad, pad), dc::engine());
    forward_ = dnnl::pooling_forward(fwd_pd);
    if (!p.training) return;
    backward_ = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
        dnnl::pooling_backward::desc(algo, src_, dst_, strides, kernel, pad, pad), dc::engine(), fwd_pd));
    if (p.mode == PoolMode::kMax) workspace_ = dnnl::memory(fwd_pd.workspace_desc(), dc::engine());
  }

  dnnl::memory::desc src_, dst_;
  dnnl::pooling_forward forward_;
  dnnl::pooling_backward backward_;  // training only
  dnnl::memory workspace_;           // max pooling in training only
};

}  // namespace

std::unique_ptr<Pool2dKernels> make_pool2d_cpu(const Pool2dProblem& problem) {
  return std::make_unique<OneDnnPool2d>(problem);
}

}  // namespace mirror::nn::detail
