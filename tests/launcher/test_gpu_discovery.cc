// test_gpu_discovery.cc — GPU counting rules: CUDA_VISIBLE_DEVICES parsing, "" and "-1" as zero GPUs without
// a driver call, no driver as zero, and a variable naming missing GPUs as an error (driver answers faked).
#include <gtest/gtest.h>

#include "mirror/error.h"
#include "mirror/launch/gpu_discovery.h"

namespace mirror::launch {
namespace {

CudaDriverProbe driver(int count, int init_status = 0) {
  CudaDriverProbe p;
  p.loaded = true;
  p.init_status = init_status;
  p.device_count = init_status == 0 ? count : 0;
  return p;
}

TEST(GpuDiscovery, CountsRequestedEntriesLikeCuda) {
  EXPECT_EQ(count_requested_devices(""), 0);
  EXPECT_EQ(count_requested_devices("-1"), 0);
  EXPECT_EQ(count_requested_devices("0"), 1);
  EXPECT_EQ(count_requested_devices("0,1,2"), 3);
  EXPECT_EQ(count_requested_devices(" 1 , 0 "), 2);
  EXPECT_EQ(count_requested_devices("0,-1,1"), 1);  // CUDA stops at the first invalid entry
  EXPECT_EQ(count_requested_devices("GPU-8f3a,MIG-1234"), 2);
  EXPECT_EQ(count_requested_devices(","), 0);
}

TEST(GpuDiscovery, EmptyOrMinusOneMeansZeroGpusWithoutTheDriver) {
  // discover_gpus must not even need a driver here: the environment alone decides.
  EXPECT_EQ(discover_gpus({{"CUDA_VISIBLE_DEVICES", ""}}).count, 0);
  EXPECT_EQ(discover_gpus({{"CUDA_VISIBLE_DEVICES", "-1"}}).count, 0);
  // Even a driver with GPUs gives none.
  EXPECT_EQ(interpret_gpu_probe(std::string("-1"), driver(8)).count, 0);
  EXPECT_NE(interpret_gpu_probe(std::string(""), driver(8)).summary.find("hides"), std::string::npos);
}

TEST(GpuDiscovery, NoDriverMeansZeroGpus) {
  CudaDriverProbe none;
  none.detail = "libcuda.so.1: cannot open shared object file";
  EXPECT_EQ(interpret_gpu_probe(std::nullopt, none).count, 0);
  EXPECT_EQ(interpret_gpu_probe(std::string("0,1"), none).count, 0);  // nothing to check the indices against
  EXPECT_NE(interpret_gpu_probe(std::nullopt, none).summary.find("no CUDA driver"), std::string::npos);
}

TEST(GpuDiscovery, DriverCountIsUsed) {
  EXPECT_EQ(interpret_gpu_probe(std::nullopt, driver(4)).count, 4);
  EXPECT_EQ(interpret_gpu_probe(std::string("2,3"), driver(2)).count, 2);  // the driver already filtered
  EXPECT_EQ(interpret_gpu_probe(std::nullopt, driver(0, 100)).count, 0);   // driver, no device
  EXPECT_EQ(interpret_gpu_probe(std::nullopt, driver(0, 999)).count, 0);   // unusable driver
}

TEST(GpuDiscovery, MissingGpuInVisibleDevicesIsAnError) {
  // "0,5" on a one-GPU machine: CUDA keeps GPU 0 only.
  EXPECT_THROW(interpret_gpu_probe(std::string("0,5"), driver(1)), Error);
  // "7" alone: cuInit reports CUDA_ERROR_NO_DEVICE.
  try {
    interpret_gpu_probe(std::string("7"), driver(0, 100));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(e.message().find("CUDA_VISIBLE_DEVICES='7'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace mirror::launch
