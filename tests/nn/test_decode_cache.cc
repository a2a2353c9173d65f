// test_decode_cache.cc — incremental decoding (decode_cache.h) through a tiny two-block GPT built from a model
// description (odd sizes: 12 channels, 3 heads, vocabulary 11, context 9): the logits of feeding a sequence
// through the cache one token at a time, after a 4-token prefill, in chunks of several new positions and for a
// batch of two sequences all equal the full forward's (no cache) at every position; starting again from an
// earlier position forgets what came after it; positions past the context, skipped positions, a backward after
// a cached forward and an offset without a cache are refused with errors that say so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "mirror/error.h"
#include "mirror/nn/causal_self_attention.h"
#include "mirror/nn/decode_cache.h"
#include "mirror/nn/model_build.h"
#include "reference.h"

namespace mirror::nn {
namespace {

constexpr std::int64_t kVocab = 11, kContext = 9;

std::string block(const std::string& p, const std::string& residual_in) {
  return R"({"type": "layernorm", "name": ")" + p + R"(_ln1"},
    {"type": "causal_self_attention", "name": ")" + p + R"(_attn", "heads": 3},
    {"type": "add", "name": ")" + p + R"(_add1", "inputs": [")" + residual_in + R"(", ")" + p + R"(_attn"]},
    {"type": "layernorm", "name": ")" + p + R"(_ln2"},
    {"type": "linear", "name": ")" + p + R"(_fc", "out_features": 48},
    {"type": "gelu", "name": ")" + p + R"(_gelu"},
    {"type": "linear", "name": ")" + p + R"(_proj", "out_features": 12},
    {"type": "add", "name": ")" + p + R"(_add2", "inputs": [")" + p + R"(_add1", ")" + p + R"(_proj"]},)";
}

std::unique_ptr<Model> tiny_gpt() {
  const std::string json = R"({"layers": [
    {"type": "embedding", "name": "wte", "vocab": "classes", "channels": 12},
    {"type": "position_embedding", "name": "wpe", "context": 9},)" +
                           block("h0", "wpe") + block("h1", "h0_add2") + R"(
    {"type": "layernorm", "name": "ln_f"},
    {"type": "linear", "name": "head", "out_features": "classes", "bias": false, "tied_to": "wte"}]})";
  auto model = build_model(ModelDescription::parse(json, "tiny-gpt"), {kContext}, kVocab, Device{});
  model->init_parameters(5);
  // Larger weights than GPT-2's 0.02 so that attention weights differ clearly between positions.
  std::vector<float> p = model->params_to_host();
  const std::vector<float> noise = testing::random_vector(p.size(), 17, -0.5f, 0.5f);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] += noise[i];
  model->params_from_host(p);
  model->set_training(false);
  return model;
}

Tensor ids_tensor(const std::vector<std::int32_t>& ids, std::int64_t batch) {
  Tensor x({batch, static_cast<std::int64_t>(ids.size()) / batch}, Device{}, DType::kInt32);
  x.copy_from_host(std::span<const std::int32_t>(ids));
  return x;
}

// Ids [batch, T] (row-major) of random tokens.
std::vector<std::int32_t> random_ids(std::size_t count, std::uint64_t seed) {
  const std::vector<float> u = testing::random_vector(count, seed, 0.0f, static_cast<float>(kVocab));
  std::vector<std::int32_t> ids;
  for (float v : u) ids.push_back(std::min<std::int32_t>(static_cast<std::int32_t>(v), kVocab - 1));
  return ids;
}

// Logits [batch, T, vocab] of the full forward, without a cache.
std::vector<float> full_logits(Model& model, const std::vector<std::int32_t>& ids, std::int64_t batch) {
  const Tensor x = ids_tensor(ids, batch);
  return model.forward(x).to_host();
}

// Feeds positions [offset, offset + count) of each of the `batch` sequences of `ids` ([batch, T]) through the
// cache; returns their logits [batch, count, vocab].
std::vector<float> cached_logits(Model& model, DecodeCache& cache, const std::vector<std::int32_t>& ids,
                                 std::int64_t batch, std::int64_t offset, std::int64_t count) {
  const std::int64_t t = static_cast<std::int64_t>(ids.size()) / batch;
  std::vector<std::int32_t> part;
  for (std::int64_t n = 0; n < batch; ++n)
    part.insert(part.end(), ids.begin() + n * t + offset, ids.begin() + n * t + offset + count);
  const Tensor x = ids_tensor(part, batch);
  ForwardContext context;
  context.cache = &cache;
  context.position_offset = offset;
  const Tensor& logits = model.forward(x, context);
  EXPECT_EQ(logits.shape(), (Shape{batch, count, kVocab}));
  return logits.to_host();
}

// Feeds `ids` through the cache in chunks of the given sizes (summing to T) and checks every position's logits
// against `want` ([batch, T, vocab]).
void expect_chunks_match(Model& model, const std::vector<std::int32_t>& ids, std::int64_t batch,
                         const std::vector<std::int64_t>& chunks, const std::vector<float>& want) {
  const std::int64_t t = static_cast<std::int64_t>(ids.size()) / batch;
  DecodeCache cache(kContext);
  std::int64_t offset = 0;
  for (std::int64_t count : chunks) {
    const std::vector<float> got = cached_logits(model, cache, ids, batch, offset, count);
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t v = 0; v < kVocab; ++v)
          ASSERT_NEAR(got[(n * count + i) * kVocab + v], want[(n * t + offset + i) * kVocab + v], 1e-5)
              << "sample " << n << " position " << offset + i << " token " << v;
    offset += count;
  }
  EXPECT_EQ(offset, t);
}

TEST(DecodeCache, OneTokenAtATimeMatchesTheFullForward) {
  auto model = tiny_gpt();
  const std::vector<std::int32_t> ids = random_ids(kContext, 1);
  const std::vector<float> want = full_logits(*model, ids, 1);
  expect_chunks_match(*model, ids, 1, std::vector<std::int64_t>(kContext, 1), want);
}

TEST(DecodeCache, PrefillThenOneTokenAtATimeMatchesTheFullForward) {
  auto model = tiny_gpt();
  const std::vector<std::int32_t> ids = random_ids(kContext, 2);
  const std::vector<float> want = full_logits(*model, ids, 1);
  expect_chunks_match(*model, ids, 1, {4, 1, 1, 1, 1, 1}, want);
}

TEST(DecodeCache, ChunksOfSeveralPositionsAndABatchMatchTheFullForward) {
  auto model = tiny_gpt();
  const std::vector<std::int32_t> ids = random_ids(2 * kContext, 3);
  const std::vector<float> want = full_logits(*model, ids, 2);
  expect_chunks_match(*model, ids, 2, {4, 3, 1, 1}, want);
  expect_chunks_match(*model, ids, 2, {2, 7}, want);
}

TEST(DecodeCache, StartingAgainFromAnEarlierPositionForgetsWhatCameAfter) {
  auto model = tiny_gpt();
  const std::vector<std::int32_t> first = random_ids(kContext, 4);
  std::vector<std::int32_t> second = first;
  for (std::size_t i = 5; i < second.size(); ++i) second[i] = (second[i] + 3) % kVocab;
  const std::vector<float> want = full_logits(*model, second, 1);
  DecodeCache cache(kContext);
  cached_logits(*model, cache, first, 1, 0, kContext);
  // Positions 5.. again with other tokens: the cache keeps [0, 5) and forgets the rest.
  std::vector<float> got = cached_logits(*model, cache, second, 1, 5, kContext - 5);
  for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[5 * kVocab + k], 1e-5) << k;
  // From 0: a fresh window (what generation does after cropping to the context).
  const std::vector<float> from_zero = cached_logits(*model, cache, second, 1, 0, kContext);
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(from_zero[k], want[k], 1e-5) << k;
}

// The message of the error that `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(DecodeCache, RefusesPositionsPastTheContextAndOtherMisuse) {
  auto model = tiny_gpt();
  const std::vector<std::int32_t> ids = random_ids(kContext + 1, 5);
  DecodeCache cache(kContext);
  cached_logits(*model, cache, ids, 1, 0, kContext);
  std::string message = error_of([&] { cached_logits(*model, cache, ids, 1, kContext, 1); });
  EXPECT_NE(message.find("positions [9, 10) are past the model's context of 9 positions"), std::string::npos)
      << message;

  DecodeCache fresh(kContext);
  cached_logits(*model, fresh, ids, 1, 0, 2);
  message = error_of([&] { cached_logits(*model, fresh, ids, 1, 3, 1); });
  EXPECT_NE(message.find("a forward from position 3 but only positions [0, 2) are cached"), std::string::npos)
      << message;

  cached_logits(*model, fresh, ids, 1, 0, kContext);
  Tensor dlogits({1, kContext, kVocab}, Device{});
  dlogits.copy_from_host(std::vector<float>(kContext * kVocab, 0.1f));
  message = error_of([&] { model->backward(dlogits); });
  EXPECT_NE(message.find("no backward after a forward with a decode cache"), std::string::npos) << message;

  EXPECT_THROW(DecodeCache(0), Error);
}

TEST(DecodeCache, AttentionRefusesAnOffsetWithoutACache) {
  CausalSelfAttention attn(12, 3, Device{});
  std::vector<std::vector<float>> values, grads;
  std::vector<ParamBinding> bindings;
  for (const ParamSpec& spec : attn.parameter_specs()) {
    values.push_back(testing::random_vector(static_cast<std::size_t>(shape_numel(spec.shape)), 7));
    grads.emplace_back(values.back().size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) bindings.push_back({values[i].data(), grads[i].data()});
  attn.bind_parameters(bindings);
  ForwardContext no_cache;
  no_cache.position_offset = 2;
  attn.set_forward_context(&no_cache);
  Tensor x({1, 2, 12}, Device{});
  x.copy_from_host(testing::random_vector(24, 8));
  const std::string message = error_of([&] { attn.forward(x); });
  EXPECT_NE(message.find("a forward from position 2 needs a decode cache"), std::string::npos) << message;
}

}  // namespace
}  // namespace mirror::nn
