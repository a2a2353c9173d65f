// test_tensor.cc — devices (choice, errors without a GPU) and tensors (host round trips, views, growth-only
// reallocation).
#include <gtest/gtest.h>

#include "mirror/error.h"
#include "mirror/nn/device.h"
#include "mirror/nn/tensor.h"
#include "reference.h"

namespace mirror::nn {
namespace {

TEST(Device, CpuResolvesAndSetsThreads) {
  const Device d = resolve_device("cpu", 3, 1);
  EXPECT_TRUE(d.is_cpu());
  EXPECT_EQ(to_string(d), "cpu");
  EXPECT_EQ(cpu_threads(), 1);
  set_cpu_threads(2);
  EXPECT_EQ(cpu_threads(), 2);
  set_cpu_threads(1);
  EXPECT_THROW(set_cpu_threads(0), Error);
}

TEST(Device, AutoPicksCpuWithoutGpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  EXPECT_TRUE(resolve_device("auto", 0).is_cpu());
}

TEST(Device, CudaWithoutGpuIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  try {
    resolve_device("cuda", 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("device cuda requested but no CUDA GPU is visible"), std::string::npos) << e.what();
  }
}

TEST(Device, UnknownNameNamesTheString) {
  try {
    resolve_device("gpu0", 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("'gpu0'"), std::string::npos) << e.what();
  }
}

TEST(Device, CountNeverThrows) { EXPECT_GE(cuda_device_count(), 0); }

TEST(Tensor, HostRoundTripAndShape) {
  Tensor t({3, 5}, Device{});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(to_string(t.shape()), "[3, 5]");
  const auto v = testing::random_vector(15, 1);
  t.copy_from_host(v);
  EXPECT_EQ(t.to_host(), v);
  std::vector<float> wrong(14);
  EXPECT_THROW(t.copy_from_host(wrong), Error);
  EXPECT_THROW(t.copy_to_host(wrong), Error);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u);
}

TEST(Tensor, ResizeReallocatesOnlyToGrow) {
  Tensor t({64, 10}, Device{});
  float* first = t.data();
  t.resize({32, 10});
  EXPECT_EQ(t.data(), first);
  EXPECT_EQ(t.numel(), 320);
  t.resize({64, 10});
  EXPECT_EQ(t.data(), first);
  t.resize({128, 10});
  EXPECT_EQ(t.numel(), 1280);
}

TEST(Tensor, ViewSharesMemoryAndCannotResize) {
  std::vector<float> host(6, 1.5f);
  Tensor v = Tensor::view(host.data(), {2, 3}, Device{});
  EXPECT_TRUE(v.is_view());
  EXPECT_EQ(v.data(), host.data());
  host[4] = 7.0f;
  EXPECT_EQ(v.to_host()[4], 7.0f);
  EXPECT_THROW(v.resize({3, 3}), Error);
}

TEST(Tensor, TypedElementsOfAnyRank) {
  Tensor ids({2, 3, 4, 5, 6}, Device{}, DType::kInt32);
  EXPECT_EQ(ids.dtype(), DType::kInt32);
  EXPECT_EQ(ids.bytes(), 2u * 3 * 4 * 5 * 6 * 4);
  std::vector<std::int32_t> v(720);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i) - 7;
  ids.copy_from_host(std::span<const std::int32_t>(v));
  EXPECT_EQ(ids.to_host_int32(), v);
  EXPECT_EQ(ids.as<std::int32_t>()[8], 1);
  // Asking for another element type names both.
  try {
    ids.data();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("holds int32 values where float32 is needed"), std::string::npos) << e.message();
  }
  EXPECT_THROW(ids.to_host(), Error);
  Tensor half({3, 5}, Device{}, DType::kBFloat16);
  EXPECT_EQ(half.bytes(), 30u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_STREQ(to_string(DType::kBFloat16), "bfloat16");
  EXPECT_THROW(half.as<std::int32_t>(), Error);
  half.resize({7});  // the dtype stays
  EXPECT_EQ(half.dtype(), DType::kBFloat16);
  EXPECT_EQ(half.bytes(), 14u);
  Tensor view = Tensor::view(ids.raw_data(), {720}, Device{}, DType::kInt32);
  EXPECT_EQ(view.as<std::int32_t>(), ids.as<std::int32_t>());
}

TEST(Tensor, NegativeDimensionRefused) { EXPECT_THROW(Tensor({2, -1}, Device{}), Error); }

}  // namespace
}  // namespace mirror::nn
