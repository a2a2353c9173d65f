// test_fusion_pass.cc — the fusion pass switched on and off (ModelGraph::fusion, --fusion): cnn-bn and resnet20
// give the same logits, loss, gradients and running statistics either way within float rounding (the fused
// kernels do the same operations; only where values are rounded to float may differ), and the layer table names
// every fusion made, and none when the pass is off.
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/nn/loss.h"
#include "mirror/nn/model_build.h"
#include "reference.h"

namespace mirror::nn {
namespace {

using testing::random_vector;

struct Pass {
  std::vector<float> logits, grads, buffers;
  double loss = 0;
  std::string table;
};

Pass run(const std::string& name, bool fusion) {
  const Shape sample{3, 8, 8};
  auto model = std::make_unique<Model>(build_graph(name, sample, 5, Device{}, fusion));
  model->init_parameters(21);
  const std::int64_t batch = 4;
  Tensor x({batch, 3, 8, 8}, Device{});
  x.copy_from_host(random_vector(batch * 3 * 8 * 8, 22));
  const std::vector<std::int32_t> labels = {0, 3, 1, 4};
  SoftmaxCrossEntropy loss(Device{});
  Tensor dlogits;
  Pass p;
  const Tensor& logits = model->forward(x);
  p.logits = logits.to_host();
  p.loss = loss.forward_backward(logits, labels, dlogits).mean_loss();
  model->backward(dlogits);
  p.grads = model->grads_to_host();
  p.buffers = model->buffers_to_host();
  p.table = layer_table(*model);
  return p;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0;
  for (float v : b) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * std::max(scale, 1e-3)) << what << " " << i;
}

TEST(FusionPass, OnAndOffAgreeWithinFloatRounding) {
  for (const char* name : {"cnn-bn", "resnet20"}) {
    SCOPED_TRACE(name);
    const Pass on = run(name, true), off = run(name, false);
    EXPECT_NEAR(on.loss, off.loss, 1e-5 * std::max(1.0, std::fabs(off.loss)));
    expect_close(on.logits, off.logits, 1e-5, "logits");
    expect_close(on.grads, off.grads, 1e-4, "gradients");
    expect_close(on.buffers, off.buffers, 1e-5, "running statistics");
    EXPECT_NE(on.table.find("fused: "), std::string::npos) << on.table;
    EXPECT_EQ(off.table.find("fused: "), std::string::npos) << off.table;
  }
}

TEST(FusionPass, TheTableNamesWhatWasFused) {
  // cnn-bn: bn1 → relu1 → pool1 is one layer (the pooling normalises as it reads), so is bn2 → relu2 → pool2.
  const std::string table = run("cnn-bn", true).table;
  EXPECT_NE(table.find("bn1 (batchnorm2d+relu+maxpool2d)"), std::string::npos) << table;
  EXPECT_NE(table.find("fused: bn1, relu1, pool1"), std::string::npos) << table;
  EXPECT_NE(table.find("fused: bn2, relu2, pool2"), std::string::npos) << table;
  EXPECT_EQ(table.find("pool1 (maxpool2d)"), std::string::npos) << table;
  // resnet20: each block applies the ReLU after it, each body's first BatchNorm the ReLU after it.
  const std::string resnet = run("resnet20", true).table;
  EXPECT_NE(resnet.find("stage1_block1 (residual+relu)"), std::string::npos) << resnet;
  EXPECT_NE(resnet.find("body.bn1 (batchnorm2d+relu)"), std::string::npos) << resnet;
  const std::string off = run("cnn-bn", false).table;
  EXPECT_NE(off.find("pool1 (maxpool2d)"), std::string::npos) << off;
  EXPECT_NE(off.find("relu1 (relu)"), std::string::npos) << off;
}

}  // namespace
}  // namespace mirror::nn
