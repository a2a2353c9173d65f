// test_grad_sync.cc — GradientBucketer under mpirun: buckets tile the gradient buffer in backward order, each
// bucket starts as soon as its last gradient is reported, and the result equals the serial average of every
// rank's gradients (exact-sum inputs: small integers and halves, so float sums and /N are exact for N = 1,2,4;
// for 3 ranks the tolerance is one float rounding); sharded, the ranks own a partition of the buffer and
// gather() restores every element from its owner.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"
#include "mirror/train/grad_sync.h"

using namespace mirror;

namespace {

std::vector<train::GradSlice> layout(const std::vector<std::size_t>& sizes) {
  std::vector<train::GradSlice> s;
  std::size_t off = 0;
  for (std::size_t n : sizes) {
    s.push_back({off, n});
    off += n;
  }
  return s;
}

float grad_value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 13)) - 6.0f; }

}  // namespace

TEST(GradSync, AveragesEveryBucketAndOverlapsBackward) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank(), world = comm->size();
  // A model-like list: weights and biases of mixed sizes.
  const std::vector<std::size_t> sizes{784 * 64, 64, 64 * 32, 32, 32 * 10, 10, 5, 100000};
  const auto slices = layout(sizes);
  const std::size_t total = slices.back().offset + slices.back().numel;
  std::vector<float> grads(total);
  for (std::size_t i = 0; i < total; ++i) grads[i] = grad_value(rank, i);

  train::GradientBucketer bucketer(*comm, grads.data(), slices, 64 * 1024);  // 64 KiB buckets
  std::size_t covered = 0;
  for (std::size_t b = 0; b < bucketer.bucket_count(); ++b) covered += bucketer.bucket_numel(b);
  EXPECT_EQ(covered, total);
  // Backward order: 100000 floats (400 KB) fill bucket 1 alone; 5+10+320+32+2048+64 = 2479 floats stay under
  // 64 KiB (16384 floats) until the 50176-float first weight closes bucket 2.
  EXPECT_EQ(bucketer.bucket_count(), 2u);
  EXPECT_EQ(bucketer.bucket_numel(0), 100000u);

  bucketer.begin_step(true);
  for (std::size_t k = sizes.size(); k-- > 0;) bucketer.on_grad_ready(k);
  // All but the last started during "backward"; the last runs in finish().
  EXPECT_EQ(bucketer.started_before_finish(), bucketer.bucket_count() - 1);
  bucketer.finish();

  for (std::size_t i = 0; i < total; ++i) {
    double sum = 0;
    for (int r = 0; r < world; ++r) sum += grad_value(r, i);
    const double expected = sum / world;
    ASSERT_NEAR(grads[i], expected, std::fabs(expected) * 1e-6) << "element " << i;
  }
}

TEST(GradSync, AccumulationStepsDoNotCommunicate) {
  auto comm = coll::make_communicator();
  const auto slices = layout({10, 20, 30});
  std::vector<float> grads(60, static_cast<float>(comm->rank() + 1));
  train::GradientBucketer bucketer(*comm, grads.data(), slices, 16);
  bucketer.begin_step(false);
  for (std::size_t k = 3; k-- > 0;) bucketer.on_grad_ready(k);
  bucketer.finish();
  for (float g : grads) ASSERT_EQ(g, static_cast<float>(comm->rank() + 1));
}

TEST(GradSync, WithoutOverlapEverythingStartsInFinish) {
  auto comm = coll::make_communicator();
  const auto slices = layout({1000, 1, 999});
  std::vector<float> grads(2000);
  for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = grad_value(comm->rank(), i);
  train::GradientBucketer bucketer(*comm, grads.data(), slices, 400, /*overlap=*/false);
  bucketer.begin_step(true);
  for (std::size_t k = 3; k-- > 0;) bucketer.on_grad_ready(k);
  EXPECT_EQ(bucketer.started_before_finish(), 0u);
  bucketer.finish();
  const int world = comm->size();
  for (std::size_t i = 0; i < grads.size(); ++i) {
    double sum = 0;
    for (int r = 0; r < world; ++r) sum += grad_value(r, i);
    ASSERT_NEAR(grads[i], sum / world, std::fabs(sum / world) * 1e-6);
  }
}

TEST(GradSync, ReportingAParameterTwiceIsAnError) {
  auto comm = coll::make_communicator();
  std::vector<float> grads(8, 1.0f);
  train::GradientBucketer bucketer(*comm, grads.data(), layout({4, 4}), 1 << 20);
  bucketer.begin_step(true);
  bucketer.on_grad_ready(1);
  EXPECT_THROW(bucketer.on_grad_ready(1), mirror::Error);
  bucketer.on_grad_ready(0);
  bucketer.finish();
}

// Sharded: the ranks' owned ranges partition the buffer (the tails of buckets not divisible by the rank
// count are owned by every rank), each rank's owned gradients are the serial average, and gather() gives
// every rank each owner's values. In ordinary memory and in shared buffers (the shared-memory transport's
// direct reduce_scatter and allgather).
TEST(GradSync, ShardedRangesPartitionTheBufferAndGatherRestoresIt) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank(), world = comm->size();
  const std::vector<std::size_t> sizes{784 * 64 + 1, 63, 2049, 31, 100003};
  const auto slices = layout(sizes);
  const std::size_t total = slices.back().offset + slices.back().numel;
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared buffers" : "ordinary memory");
    coll::SharedBuffer grad_memory, param_memory;
    std::vector<float> grad_vector, param_vector;
    float* grads = nullptr;
    float* params = nullptr;
    if (shared) {
      grad_memory = comm->allocate_shared(total * sizeof(float));
      param_memory = comm->allocate_shared(total * sizeof(float));
      grads = grad_memory.as<float>();
      params = param_memory.as<float>();
    } else {
      grad_vector.resize(total);
      param_vector.resize(total);
      grads = grad_vector.data();
      params = param_vector.data();
    }
    for (std::size_t i = 0; i < total; ++i) grads[i] = grad_value(rank, i);
    train::GradientBucketer bucketer(*comm, grads, slices, 64 * 1024, /*overlap=*/true, /*sharded=*/true);
    EXPECT_EQ(bucketer.sharded(), world > 1);
    bucketer.begin_step(true);
    for (std::size_t k = sizes.size(); k-- > 0;) bucketer.on_grad_ready(k);
    bucketer.finish();

    // Every rank's ranges, gathered: each element is owned by exactly one rank, or by all (tails).
    std::vector<std::int64_t> mine;
    for (const auto& [begin, end] : bucketer.owned_ranges()) {
      ASSERT_LT(begin, end);
      mine.push_back(static_cast<std::int64_t>(begin));
      mine.push_back(static_cast<std::int64_t>(end));
    }
    std::int64_t count = static_cast<std::int64_t>(mine.size()), most = 0;
    comm->allreduce(&count, &most, 1, coll::DataType::kInt64, coll::ReduceOp::kMax);
    mine.resize(static_cast<std::size_t>(most), -1);
    std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(world));
    comm->allgather(mine.data(), all.data(), mine.size(), coll::DataType::kInt64);
    std::vector<int> owners(total, 0);
    for (std::size_t k = 0; k + 1 < all.size(); k += 2)
      for (std::int64_t i = all[k]; i >= 0 && i < all[k + 1]; ++i) owners[static_cast<std::size_t>(i)] += 1;
    std::size_t tail_elements = 0;
    for (std::size_t i = 0; i < total; ++i) {
      ASSERT_TRUE(owners[i] == 1 || owners[i] == world) << "element " << i << " has " << owners[i] << " owners";
      tail_elements += world > 1 && owners[i] == world ? 1 : 0;
    }
    EXPECT_LT(tail_elements, 2u * static_cast<std::size_t>(world));  // at most world - 1 per bucket, 2 buckets

    for (const auto& [begin, end] : bucketer.owned_ranges()) {
      for (std::size_t i = begin; i < end; ++i) {
        double sum = 0;
        for (int r = 0; r < world; ++r) sum += grad_value(r, i);
        ASSERT_NEAR(grads[i], sum / world, std::fabs(sum / world) * 1e-6) << "element " << i;
      }
    }

    // gather: owners write i * 0.5, everything else holds a rank-specific wrong value.
    for (std::size_t i = 0; i < total; ++i) params[i] = -1000.0f - static_cast<float>(rank);
    for (const auto& [begin, end] : bucketer.owned_ranges())
      for (std::size_t i = begin; i < end; ++i) params[i] = static_cast<float>(i) * 0.5f;
    bucketer.gather(params);
    for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(params[i], static_cast<float>(i) * 0.5f) << "element " << i;
  }
}

namespace {

// An independent bit-level reference of round-to-nearest-even to bfloat16 (finite inputs), and of the
// float16 value nearest to a float (the float16 grid, by brute force over all 63488 finite values' halves).
float reference_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

float reference_fp16(float x) {  // nearest of the float16 grid spacing for |x| < 65504: ulp = 2^(e-10), min 2^-24
  const double a = std::fabs(static_cast<double>(x));
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(e - 11, -24));
  return static_cast<float>(std::copysign(std::nearbyint(a / ulp) * ulp, static_cast<double>(x)));  // ties to even
}

// Rank r's gradient: not exactly representable in 16 bits, and different on every rank.
float wide_value(int rank, std::size_t i) {
  return std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(rank)) * 0.01f *
         static_cast<float>(1 + i % 7);
}

}  // namespace

// --grad-dtype bf16|fp16: every element ends as (1/S) * q( (sum over r of q(S * g_r)) / N ) with the sum
// in float32 in rank order (the rule in mirror/train/grad_compression.h), from a plain serial loop and
// the independent rounding references above; all-reduced and sharded (each rank checks what it owns), with
// buckets overlapped with backward. At one rank: (1/S) * q(S * g).
TEST(GradSync, SixteenBitGradientsFollowTheRoundingRule) {
  auto comm = coll::make_communicator();
  const int rank = comm->rank(), world = comm->size();
  const auto slices = layout({3000, 17, 2000, 5, 1001});
  const std::size_t total = 6023;
  for (const coll::DataType type : {coll::DataType::kBFloat16, coll::DataType::kFloat16}) {
    const bool half = type == coll::DataType::kFloat16;
    const float scale = half ? 1024.0f : 1.0f;
    auto q = [half](float x) { return half ? reference_fp16(x) : reference_bf16(x); };
    for (const bool sharded : {false, true}) {
      std::vector<float> grads(total);
      for (std::size_t i = 0; i < total; ++i) grads[i] = wide_value(rank, i);
      train::GradientBucketer bucketer(*comm, grads.data(), slices, 4096, true, sharded,
                                       train::GradWire{type, nullptr, {}});
      bucketer.set_scale(scale);
      bucketer.begin_step(true);
      for (std::size_t k = slices.size(); k-- > 0;) bucketer.on_grad_ready(k);
      bucketer.finish();
      std::size_t checked = 0, off_fp32 = 0;
      for (const auto& [begin, end] : bucketer.owned_ranges())
        for (std::size_t i = begin; i < end; ++i) {
          float sum = 0.0f;
          for (int r = 0; r < world; ++r) sum += q(scale * wide_value(r, i));
          const float expected = q(sum / static_cast<float>(world)) / scale;
          ASSERT_EQ(grads[i], expected) << coll::to_string(type) << (sharded ? " sharded" : "") << " element " << i;
          float exact = 0.0f;
          for (int r = 0; r < world; ++r) exact += wide_value(r, i);
          off_fp32 += grads[i] != exact / static_cast<float>(world);
          ++checked;
        }
      EXPECT_GT(checked, 0u);
      EXPECT_GT(off_fp32, checked / 2) << "the 16-bit result should differ from float32's for most elements";
    }
  }
}
