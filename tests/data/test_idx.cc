// test_idx.cc — IDX parsing treats its input as untrusted (every header field and the exact length are
// checked), gz files decompress, and the Fashion-MNIST converter works on a small hand-made IDX set.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "mirror/data/convert.h"
#include "mirror/data/idx.h"
#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

std::vector<uint8_t> idx_bytes(std::vector<uint32_t> dims, uint8_t type = 0x08) {
  std::vector<uint8_t> b{0, 0, type, static_cast<uint8_t>(dims.size())};
  uint64_t n = 1;
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
    n *= d;
  }
  for (uint64_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i * 3));
  return b;
}

std::string parse_error(const std::vector<uint8_t>& b, int ndims) {
  try {
    parse_idx(b, ndims, "f.idx");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(e.message().find("f.idx"), std::string::npos);
    return e.message();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Idx, ParsesValidArrays) {
  const IdxArray a = parse_idx(idx_bytes({2, 3, 4}), 3, "a");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(a.data.size(), 24u);
  EXPECT_EQ(a.data[5], 15);
}

TEST(Idx, RejectsBadHeadersAndLengths) {
  auto good = idx_bytes({2, 3, 4});
  EXPECT_NE(parse_error({0, 0}, 3).find("at least a 4-byte header"), std::string::npos);
  auto bad_magic = good;
  bad_magic[0] = 1;
  EXPECT_NE(parse_error(bad_magic, 3).find("magic"), std::string::npos);
  EXPECT_NE(parse_error(idx_bytes({2, 3}, 0x0D), 2).find("expected 0x08"), std::string::npos);
  EXPECT_NE(parse_error(good, 1).find("3 dimensions; expected 1"), std::string::npos);
  EXPECT_NE(parse_error(std::vector<uint8_t>(good.begin(), good.begin() + 9), 3).find("truncated"), std::string::npos);
  auto shorter = good;
  shorter.pop_back();
  EXPECT_NE(parse_error(shorter, 3).find("23 data bytes; expected 24"), std::string::npos);
  auto longer = good;
  longer.push_back(0);
  EXPECT_NE(parse_error(longer, 3).find("25 data bytes; expected 24"), std::string::npos);
  EXPECT_NE(parse_error(idx_bytes({0}), 1).find("dimension 0 is 0"), std::string::npos);
  auto huge = idx_bytes({1, 1, 1});
  huge[4] = 0x7f;  // first dimension ~2^30 * 2: rejected before any allocation
  EXPECT_NE(parse_error(huge, 3).find("dimension 0"), std::string::npos);
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

TEST(Idx, ReadsGzippedAndPlainFiles) {
  test::TempDir dir;
  const auto bytes = idx_bytes({5, 2});
  write_gz(dir.file("a.gz"), bytes);
  EXPECT_EQ(read_maybe_gzipped(dir.file("a.gz")), bytes);
  EXPECT_THROW(read_maybe_gzipped(dir.file("a.gz"), 10), Error);  // size cap
  EXPECT_THROW(read_maybe_gzipped(dir.file("missing.gz")), Error);
}

TEST(FashionMnistConverter, ConvertsSmallHandMadeSet) {
  test::TempDir dir;
  // 20 train and 10 test 28x28 images; labels i % 10.
  auto labels = [](uint32_t n) {
    std::vector<uint8_t> b{0, 0, 8, 1, static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16),
                           static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
    for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i % 10));
    return b;
  };
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_bytes({20, 28, 28}));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels(20));
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes({10, 28, 28}));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), labels(10));
  WriteOptions w;
  w.shards = 2;
  const auto files = convert_fashion_mnist(dir.path(), dir.file("fm.h5"), w);
  ASSERT_EQ(files.size(), 2u);
  const Dataset ds = Dataset::open(dir.file("fm.h5"));
  EXPECT_EQ(ds.info().train_size, 20);
  EXPECT_EQ(ds.info().test_size, 10);
  EXPECT_EQ(ds.info().sample_shape, (std::vector<int64_t>{28, 28}));
  EXPECT_EQ(ds.split("train").class_counts, std::vector<int64_t>(10, 2));
  EvalLoader ev(ds, "train", 1, 0, 20);
  Batch b;
  ASSERT_TRUE(ev.next(b));
  // Image i, pixel p holds byte (i * 784 + p) * 3 mod 256, scaled by 1/255.
  for (int64_t i : {0, 7, 19}) {
    for (int64_t p : {0, 100, 783}) {
      const auto v = static_cast<uint8_t>((i * 784 + p) * 3);
      EXPECT_NEAR(b.x[static_cast<std::size_t>(i * 784 + p)], v / 255.0, 1e-6);
    }
    EXPECT_EQ(b.y[static_cast<std::size_t>(i)], i % 10);
  }
}

TEST(FashionMnistConverter, MissingSourceSaysHowToInstall) {
  test::TempDir dir;
  try {
    convert_fashion_mnist(dir.file("absent"), dir.file("fm.h5"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.message().find("apt-get install dataset-fashion-mnist"), std::string::npos) << e.message();
  }
}

TEST(Synthetic, IsDeterministicAndLabelled) {
  test::TempDir dir;
  SynthOptions s;
  s.train = 300;
  s.test = 50;
  s.features = 6;
  s.classes = 3;
  s.seed = 9;
  write_synthetic(dir.file("a.h5"), s);
  write_synthetic(dir.file("b.h5"), s);
  const Dataset a = Dataset::open(dir.file("a.h5"));
  EXPECT_EQ(a.info().x_dtype, DType::kFloat32);
  EXPECT_EQ(a.info().features, 6);
  int64_t total = 0;
  for (int64_t c : a.split("train").class_counts) {
    EXPECT_GT(c, 50);  // labels are uniform over 3 classes: ~100 each
    total += c;
  }
  EXPECT_EQ(total, 300);
  EvalLoader ea(a, "train", 1, 0, 300), eb(Dataset::open(dir.file("b.h5")), "train", 1, 0, 300);
  Batch ba, bb;
  ASSERT_TRUE(ea.next(ba));
  ASSERT_TRUE(eb.next(bb));
  EXPECT_EQ(ba.x, bb.x);
  EXPECT_EQ(ba.y, bb.y);
  // Learnable: nearest class mean (from the training data itself) classifies most samples right.
  std::vector<double> mean(18, 0.0);
  std::vector<int> cnt(3, 0);
  for (int i = 0; i < 300; ++i) {
    ++cnt[static_cast<std::size_t>(ba.y[static_cast<std::size_t>(i)])];
    for (int f = 0; f < 6; ++f) mean[static_cast<std::size_t>(ba.y[static_cast<std::size_t>(i)] * 6 + f)] += ba.x[static_cast<std::size_t>(i * 6 + f)];
  }
  for (int c = 0; c < 3; ++c)
    for (int f = 0; f < 6; ++f) mean[static_cast<std::size_t>(c * 6 + f)] /= cnt[static_cast<std::size_t>(c)];
  int right = 0;
  for (int i = 0; i < 300; ++i) {
    int best = 0;
    double best_d = 1e300;
    for (int c = 0; c < 3; ++c) {
      double d = 0;
      for (int f = 0; f < 6; ++f) {
        const double diff = ba.x[static_cast<std::size_t>(i * 6 + f)] - mean[static_cast<std::size_t>(c * 6 + f)];
        d += diff * diff;
      }
      if (d < best_d) best_d = d, best = c;
    }
    right += best == ba.y[static_cast<std::size_t>(i)];
  }
  EXPECT_GT(right, 200);
}

// --shape C,H,W: image-shaped samples, the dataset's sample_shape says so, and the values are the flat
// generator's laid out in C, H, W order (same seed, same features: identical rows).
TEST(Synthetic, WritesImageShapedSamples) {
  test::TempDir dir;
  SynthOptions flat;
  flat.train = 40;
  flat.test = 10;
  flat.features = 2 * 3 * 5;
  flat.classes = 3;
  flat.seed = 4;
  SynthOptions image = flat;
  image.features = 0;
  image.shape = {2, 3, 5};
  write_synthetic(dir.file("flat.h5"), flat);
  write_synthetic(dir.file("image.h5"), image);
  const Dataset d = Dataset::open(dir.file("image.h5"));
  EXPECT_EQ(d.info().sample_shape, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(d.info().features, 30);
  EvalLoader ei(d, "train", 1, 0, 40), ef(Dataset::open(dir.file("flat.h5")), "train", 1, 0, 40);
  Batch bi, bf;
  ASSERT_TRUE(ei.next(bi));
  ASSERT_TRUE(ef.next(bf));
  EXPECT_EQ(bi.x, bf.x);
  EXPECT_EQ(bi.y, bf.y);
  image.shape = {12, 12};
  write_synthetic(dir.file("hw.h5"), image);
  EXPECT_EQ(Dataset::open(dir.file("hw.h5")).info().sample_shape, (std::vector<int64_t>{12, 12}));
}

TEST(Synthetic, RefusesBadShapes) {
  test::TempDir dir;
  SynthOptions s;
  s.train = 10;
  s.test = 5;
  s.features = 0;
  for (const auto& [shape, what] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{12}, "takes H,W or C,H,W"}, {{1, 2, 3, 4}, "takes H,W or C,H,W"}, {{1, 0, 4}, "must be in 1..65536"}}) {
    s.shape = shape;
    try {
      write_synthetic(dir.file("bad.h5"), s);
      ADD_FAILURE() << "no error for shape of " << shape.size() << " dimension(s)";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
    }
  }
  s.shape = {1, 4, 4};
  s.features = 20;
  try {
    write_synthetic(dir.file("bad.h5"), s);
    ADD_FAILURE() << "no error for --features 20 with --shape 1,4,4";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("does not match --shape (16 values per sample)"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace mirror::data
