// test_fashion_mnist.cc — the real Fashion-MNIST converted by the library: 60000 train and 10000 test
// 28x28 images with 6000 and 1000 per class (the dataset's published balance). Skips without the
// Debian package dataset-fashion-mnist.
#include <gtest/gtest.h>

#include <filesystem>

#include "mirror/data/convert.h"
#include "mirror/data/loader.h"
#include "test_util.h"

namespace mirror::data {
namespace {

TEST(FashionMnist, CountsAndClassHistogram) {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  test::TempDir dir;
  WriteOptions w;
  w.shards = 2;
  convert_fashion_mnist(kFashionMnistDir, dir.file("fm.h5"), w);
  const Dataset ds = Dataset::open(dir.file("fm.h5"));
  EXPECT_EQ(ds.info().train_size, 60000);
  EXPECT_EQ(ds.info().test_size, 10000);
  EXPECT_EQ(ds.info().num_classes, 10);
  EXPECT_EQ(ds.info().sample_shape, (std::vector<int64_t>{28, 28}));
  // Histogram counted here from the labels read back, not from the library's own class_counts.
  for (const auto& [split, per_class] : {std::pair<const char*, int64_t>{"train", 6000}, {"test", 1000}}) {
    std::vector<int64_t> hist(10, 0);
    EvalLoader ev(ds, split, 1, 0, 8192);
    Batch b;
    float lo = 1e9f, hi = -1e9f;
    while (ev.next(b)) {
      for (int32_t y : b.y) ++hist[static_cast<std::size_t>(y)];
      for (float v : b.x) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    EXPECT_EQ(hist, std::vector<int64_t>(10, per_class)) << split;
    EXPECT_EQ(ds.split(split).class_counts, hist);
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);
  }
  const std::string report = inspect_report(dir.file("fm.h5"));
  EXPECT_NE(report.find("60000 samples"), std::string::npos) << report;
}

}  // namespace
}  // namespace mirror::data
