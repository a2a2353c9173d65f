// test_lm_cuda.cc — the language-model layers on CUDA against the same layers on the CPU (an independent
// implementation: oneDNN sgemm, blocked online-softmax attention, double statistics): a tiny GPT's logits, loss and
// every parameter gradient (token and position embeddings, LayerNorm, attention over 70 positions, GELU, the tied
// head), element layers alone (LayerNorm, GELU), the embedding's backward repeating bit for bit (no atomics), and
// the bfloat16 linear layers (cuBLAS) against float32 on the CPU within bfloat16's tolerance, and decoding with a
// key/value cache in GPU memory (a prefill, then a token at a time) against the CPU's full forward, and the fused
// classifier over GPT-2's vocabulary.
// Every case GTEST_SKIPs when no CUDA GPU is visible (always in a CPU-only build).
#include <gtest/gtest.h>

#include <cmath>

#include "mirror/nn/decode_cache.h"
#include "mirror/nn/device.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/model.h"
#include "mirror/nn/model_build.h"
#include "mirror/nn/model_description.h"
#include "mirror/nn/ops.h"
#include "mirror/nn/precision.h"
#include "reference.h"
#include "scoped_precision.h"

namespace mirror::nn {
namespace {

using testing::max_relative_difference;
using testing::random_vector;

class CudaLm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU visible";
    gpu_ = resolve_device("cuda", 0);
  }
  Device gpu_;
  Device cpu_;
};

constexpr const char* kTinyGpt = R"({"layers": [
  {"type": "embedding", "name": "wte", "vocab": "classes", "channels": 32},
  {"type": "position_embedding", "name": "wpe", "context": 80},
  {"type": "layernorm", "name": "ln1"},
  {"type": "causal_self_attention", "name": "attn", "heads": 2},
  {"type": "add", "name": "add1", "inputs": ["wpe", "attn"]},
  {"type": "layernorm", "name": "ln2"},
  {"type": "linear", "name": "fc", "out_features": 128},
  {"type": "gelu", "name": "gelu"},
  {"type": "linear", "name": "proj", "out_features": 32},
  {"type": "add", "name": "add2", "inputs": ["add1", "proj"]},
  {"type": "layernorm", "name": "ln_f"},
  {"type": "linear", "name": "head", "out_features": "classes", "bias": false, "tied_to": "wte"}]})";

struct Step {
  double loss = 0.0;
  std::vector<float> logits, grads;
};

Step gpt_step(const Device& device, const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets,
              std::int64_t n, std::int64_t t, std::int64_t vocab) {
  auto model = build_model(ModelDescription::parse(kTinyGpt, "tiny"), {t}, vocab, device);
  model->init_parameters(17);
  Tensor x({n, t}, device, DType::kInt32), y({n, t}, Device{}, DType::kInt32);
  x.copy_from_host(std::span<const std::int32_t>(ids));
  y.copy_from_host(std::span<const std::int32_t>(targets));
  SoftmaxCrossEntropy loss(device);
  Tensor dlogits;
  Step s;
  const Tensor& logits = model->forward(x);
  s.loss = loss.forward_backward(logits, y, dlogits).mean_loss();
  s.logits = logits.to_host();
  model->backward(dlogits);
  s.grads = model->grads_to_host();
  return s;
}

TEST_F(CudaLm, TinyGptStepMatchesCpu) {
  const std::int64_t n = 3, t = 70, vocab = 61;
  std::vector<std::int32_t> ids(n * t), targets(n * t);
  for (std::int64_t i = 0; i < n * t; ++i) {
    ids[i] = static_cast<std::int32_t>((i * 13 + 5) % 17);  // few tokens, each many times: the embedding's sums
    targets[i] = static_cast<std::int32_t>((i * 7 + 3) % vocab);
  }
  const Step cpu = gpt_step(cpu_, ids, targets, n, t, vocab), gpu = gpt_step(gpu_, ids, targets, n, t, vocab);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * cpu.loss);
  EXPECT_LT(max_relative_difference(gpu.logits, cpu.logits), 1e-5);
  EXPECT_LT(max_relative_difference(gpu.grads, cpu.grads), 1e-4);
  const Step again = gpt_step(gpu_, ids, targets, n, t, vocab);
  EXPECT_EQ(again.grads, gpu.grads) << "a CUDA step does not repeat bit for bit";
}

TEST_F(CudaLm, Bfloat16LinearLayersAreCloseToFloat32OnTheCpu) {
  const std::int64_t n = 2, t = 64, vocab = 61;
  std::vector<std::int32_t> ids(n * t), targets(n * t);
  for (std::int64_t i = 0; i < n * t; ++i) {
    ids[i] = static_cast<std::int32_t>((i * 11 + 1) % vocab);
    targets[i] = static_cast<std::int32_t>((i * 5 + 2) % vocab);
  }
  const Step cpu = gpt_step(cpu_, ids, targets, n, t, vocab);
  const Step gpu = [&] {
    const testing::ScopedPrecision bf16(Precision::kBFloat16, gpu_);
    return gpt_step(gpu_, ids, targets, n, t, vocab);
  }();
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-2 * cpu.loss);
  EXPECT_NE(gpu.loss, cpu.loss) << "bfloat16 gave float32's exact loss: it did not run";
  EXPECT_LT(max_relative_difference(gpu.grads, cpu.grads), 3e-2);
}

TEST_F(CudaLm, DecodingWithACacheOnTheGpuMatchesTheCpusFullForward) {
  const std::int64_t n = 2, t = 40, vocab = 61;
  std::vector<std::int32_t> ids(n * t);
  for (std::int64_t i = 0; i < n * t; ++i) ids[i] = static_cast<std::int32_t>((i * 17 + 3) % vocab);
  auto cpu = build_model(ModelDescription::parse(kTinyGpt, "tiny"), {t}, vocab, cpu_);
  auto gpu = build_model(ModelDescription::parse(kTinyGpt, "tiny"), {t}, vocab, gpu_);
  cpu->init_parameters(23);
  gpu->init_parameters(23);
  Tensor x({n, t}, cpu_, DType::kInt32);
  x.copy_from_host(std::span<const std::int32_t>(ids));
  const std::vector<float> want = cpu->forward(x).to_host();  // [n, t, vocab]
  DecodeCache cache(80, gpu_);
  // A prefill of 25 positions, then one position at a time.
  for (std::int64_t offset = 0; offset < t;) {
    const std::int64_t count = offset == 0 ? 25 : 1;
    std::vector<std::int32_t> part;
    for (std::int64_t s = 0; s < n; ++s) part.insert(part.end(), ids.begin() + s * t + offset, ids.begin() + s * t + offset + count);
    Tensor chunk({n, count}, gpu_, DType::kInt32);
    chunk.copy_from_host(std::span<const std::int32_t>(part));
    ForwardContext context;
    context.cache = &cache;
    context.position_offset = offset;
    const std::vector<float> got = gpu->forward(chunk, context).to_host();
    for (std::int64_t s = 0; s < n; ++s)
      for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t v = 0; v < vocab; ++v)
          ASSERT_NEAR(got[(s * count + i) * vocab + v], want[(s * t + offset + i) * vocab + v], 1e-4)
              << "sample " << s << " position " << offset + i << " token " << v;
    offset += count;
  }
}

TEST_F(CudaLm, LayerNormAndGeluMatchCpu) {
  const char* description = R"({"layers": [{"type": "layernorm"}, {"type": "gelu"}, {"type": "layernorm"},
                                          {"type": "flatten"}, {"type": "linear", "out_features": "classes"}]})";
  // 4 × 50 rows: LayerNorm's parameter sums over several chunks of rows, the last one partial.
  const std::vector<float> x = random_vector(4 * 50 * 40, 3, -3.0f, 3.0f);
  std::vector<std::vector<float>> logits, grads;
  for (const Device& device : {cpu_, gpu_}) {
    auto model = build_model(ModelDescription::parse(description, "m"), {1, 50, 40}, 5, device);
    model->init_parameters(2);
    Tensor input({4, 1, 50, 40}, device);
    input.copy_from_host(x);
    const Tensor& y = model->forward(input);
    logits.push_back(y.to_host());
    Tensor dy(y.shape(), device);
    dy.copy_from_host(random_vector(static_cast<std::size_t>(y.numel()), 4));
    model->backward(dy);
    grads.push_back(model->grads_to_host());
  }
  EXPECT_LT(max_relative_difference(logits[1], logits[0]), 1e-5);
  EXPECT_LT(max_relative_difference(grads[1], grads[0]), 1e-5);
}

// The fused classifier (classifier_cuda.cu) over GPT-2's vocabulary, against the CPU's loop: per row the loss and
// whether the first arg-max is the label (tied maxima across threads' columns and within one thread's), every
// gradient element to 1e-5 of itself, and the gradient written over the logits (the loss rows too) bit for bit.
TEST_F(CudaLm, FusedClassifierOverAWideVocabularyMatchesCpu) {
  const std::int64_t rows = 37, cols = 50257;
  std::vector<float> z = random_vector(static_cast<std::size_t>(rows * cols), 8, -6.0f, 6.0f);
  // Row 5: ties at 300 and 556 (the same thread's columns: 556 = 300 + 256), 700 and the last column.
  for (std::int64_t c : {std::int64_t{300}, std::int64_t{556}, std::int64_t{700}, cols - 1}) z[5 * cols + c] = 9.0f;
  std::vector<std::int32_t> labels(rows);
  for (std::int64_t r = 0; r < rows; ++r) labels[r] = static_cast<std::int32_t>((r * 7919) % cols);
  labels[5] = 300;   // the first of the tied maxima: correct
  z[7 * cols + 700] = 9.0f;  // row 7: ties at 700 and 900, the label on the later one: not correct
  z[7 * cols + 900] = 9.0f;
  labels[7] = 900;
  labels[6] = 0;
  z[6 * cols] = 12.0f;  // the label is the arg-max: correct
  Tensor cz({rows, cols}, cpu_), gz({rows, cols}, gpu_);
  cz.copy_from_host(z);
  gz.copy_from_host(z);
  SoftmaxCrossEntropy cpu_loss(cpu_), gpu_loss(gpu_);
  Tensor cd, gd;
  const LossStats want = cpu_loss.forward_backward(cz, labels, cd, 100);
  const LossStats got = gpu_loss.forward_backward(gz, labels, gd, 100);
  EXPECT_EQ(want.correct, 2);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-5 * want.loss_sum);
  const std::vector<float> want_d = cd.to_host(), got_d = gd.to_host();
  for (std::size_t i = 0; i < want_d.size(); ++i)
    ASSERT_NEAR(got_d[i], want_d[i], 1e-5 * std::fabs(want_d[i]) + 1e-12) << "dlogits at row " << i / cols;

  // In place: the gradient over the logits, and each row's loss and verdict, bit for bit as the separate ones.
  const auto bytes = [](std::int64_t n, std::size_t size) { return static_cast<std::size_t>(n) * size; };
  DeviceBuffer labels_on_gpu(gpu_, bytes(rows, sizeof(std::int32_t))), loss(gpu_, bytes(rows, sizeof(float))),
      correct(gpu_, bytes(rows, sizeof(std::int32_t))), loss_apart(gpu_, bytes(rows, sizeof(float))),
      correct_apart(gpu_, bytes(rows, sizeof(std::int32_t)));
  copy_host_to_device(gpu_, labels_on_gpu.data(), labels.data(), bytes(rows, sizeof(std::int32_t)));
  const auto* dev_labels = static_cast<const std::int32_t*>(labels_on_gpu.data());
  Tensor apart({rows, cols}, gpu_);
  ops::softmax_cross_entropy(gpu_, gz.data(), dev_labels, rows, cols, 1.0f / 100, apart.data(),
                             static_cast<float*>(loss_apart.data()), static_cast<std::int32_t*>(correct_apart.data()));
  ops::softmax_cross_entropy(gpu_, gz.data(), dev_labels, rows, cols, 1.0f / 100, gz.data(),
                             static_cast<float*>(loss.data()), static_cast<std::int32_t*>(correct.data()));
  EXPECT_EQ(gz.to_host(), apart.to_host());
  std::vector<float> row_loss(rows), row_loss_apart(rows);
  std::vector<std::int32_t> row_correct(rows), row_correct_apart(rows);
  copy_device_to_host(gpu_, row_loss.data(), loss.data(), bytes(rows, sizeof(float)));
  copy_device_to_host(gpu_, row_loss_apart.data(), loss_apart.data(), bytes(rows, sizeof(float)));
  copy_device_to_host(gpu_, row_correct.data(), correct.data(), bytes(rows, sizeof(std::int32_t)));
  copy_device_to_host(gpu_, row_correct_apart.data(), correct_apart.data(), bytes(rows, sizeof(std::int32_t)));
  EXPECT_EQ(row_loss, row_loss_apart);
  EXPECT_EQ(row_correct, row_correct_apart);
}

}  // namespace
}  // namespace mirror::nn
