// test_text.cc — token datasets in one process: the window rule, Dataset::open of a token file, TrainLoader
// over windows (ranks side by side: 2 ranks x batch 2 see step for step what 1 rank x batch 4 sees, and every
// window's inputs and targets equal a plain HDF5 read of the split), EvalLoader's windows covering the split
// exactly once over the ranks, and every error: context 0 or too long, too few windows, kFiles, augmentation,
// a context for a dataset of samples, a token >= vocab_size, and the checks of write_text_dataset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <hdf5.h>

#include "mirror/data/convert.h"
#include "mirror/data/loader.h"
#include "mirror/data/text.h"
#include "mirror/data/token_writer.h"
#include "mirror/data/windows.h"
#include "mirror/error.h"
#include "test_util.h"

namespace mirror::data {
namespace {

using test::TempDir;

constexpr int64_t kVocab = 1000, kTrain = 203, kTest = 57, kContext = 5;  // 40 train, 11 test windows

uint32_t token_of(int64_t i, int split) { return static_cast<uint32_t>((i * 37 + i / 13 + split * 500) % kVocab); }

// A token dataset of kTrain + kTest tokens (token_of), chunks of 16 tokens.
std::string write_tokens(const TempDir& dir, const std::string& name = "t.h5") {
  const std::string path = dir.file(name);
  TokenWriter w(path, TokenHeader{kVocab, "test-tokens"}, kTrain, kTest, 16);
  for (int split = 0; split < 2; ++split) {
    std::vector<uint32_t> t;
    for (int64_t i = 0; i < (split ? kTest : kTrain); ++i) t.push_back(token_of(i, split));
    w.append(split ? "test" : "train", t.data(), 7);  // in two pieces
    w.append(split ? "test" : "train", t.data() + 7, static_cast<int64_t>(t.size()) - 7);
  }
  w.close();
  return path;
}

// The whole split as one plain HDF5 read (the reference the windows are compared with).
std::vector<int32_t> plain_read(const std::string& file, const std::string& split) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, ("/" + split + "/tokens").c_str(), H5P_DEFAULT);
  hid_t s = H5Dget_space(d);
  std::vector<int32_t> out(static_cast<std::size_t>(H5Sget_simple_extent_npoints(s)));
  H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

// Every window of the batch: inputs = split[i*T, i*T+T), targets = split[i*T+1, i*T+T].
void expect_windows_match(const Batch& b, const std::vector<int32_t>& split, int64_t context) {
  ASSERT_TRUE(b.x.empty());
  ASSERT_EQ(static_cast<int64_t>(b.indices.size()), b.size);
  ASSERT_EQ(static_cast<int64_t>(b.tokens.size()), b.size * context);
  ASSERT_EQ(static_cast<int64_t>(b.y.size()), b.size * context);
  for (int64_t k = 0; k < b.size; ++k) {
    const int64_t first = window_first_token(b.indices[static_cast<std::size_t>(k)], context);
    for (int64_t t = 0; t < context; ++t) {
      ASSERT_EQ(b.tokens[static_cast<std::size_t>(k * context + t)], split[static_cast<std::size_t>(first + t)]);
      ASSERT_EQ(b.y[static_cast<std::size_t>(k * context + t)], split[static_cast<std::size_t>(first + t + 1)]);
    }
  }
}

template <typename F>
std::string error_of(F f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

void expect_has(const std::string& message, std::initializer_list<std::string> parts) {
  for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

TEST(Windows, CountRule) {
  EXPECT_EQ(window_count(0, 4), 0);
  EXPECT_EQ(window_count(4, 4), 0);   // fewer than T + 1 tokens
  EXPECT_EQ(window_count(5, 4), 1);   // tokens 0..4
  EXPECT_EQ(window_count(8, 4), 1);
  EXPECT_EQ(window_count(9, 4), 2);   // windows [0, 4] and [4, 8] share token 4
  EXPECT_EQ(window_count(0, 1), 0);
  EXPECT_EQ(window_count(1, 1), 0);
  EXPECT_EQ(window_count(2, 1), 1);
  EXPECT_EQ(window_count(10, 0), 0);
  EXPECT_EQ(window_count(kTrain, kContext), 40);
  EXPECT_EQ(window_first_token(3, 4), 12);
}

TEST(TokenDataset, OpensAndDescribes) {
  TempDir dir;
  const Dataset ds = Dataset::open(write_tokens(dir));
  const DatasetInfo& info = ds.info();
  EXPECT_TRUE(info.text);
  EXPECT_EQ(info.tokenizer, "test-tokens");
  EXPECT_EQ(info.vocab_size, kVocab);
  EXPECT_EQ(info.num_classes, kVocab);
  EXPECT_EQ(info.train_size, kTrain);
  EXPECT_EQ(info.test_size, kTest);
  EXPECT_EQ(ds.split("train").size, kTrain);
  EXPECT_EQ(ds.split("test").size, kTest);
  EXPECT_EQ(ds.split("train").token_bytes, 2);
  EXPECT_EQ(ds.split("train").chunk_samples, 16);
  const std::string report = inspect_report(ds.files()[0]);
  expect_has(report, {"kind         tokens", "tokenizer    test-tokens", "vocabulary   1000", "203 tokens; uint16"});
}

TEST(TokenDataset, LargeVocabularyIsUint32) {
  TempDir dir;
  const std::string path = dir.file("big.h5");
  TokenWriter w(path, TokenHeader{70000, "wide"}, 3, 2);
  const uint32_t t[] = {69999, 0, 65536};
  w.append("train", t, 3);
  w.append("test", t, 2);
  w.close();
  const Dataset ds = Dataset::open(path);
  EXPECT_EQ(ds.split("test").token_bytes, 4);
  EXPECT_EQ(plain_read(path, "train"), (std::vector<int32_t>{69999, 0, 65536}));
}

TEST(TextTrainLoader, TwoRanksOfTwoEqualOneRankOfFourAndWindowsMatchTheFile) {
  TempDir dir;
  const Dataset ds = Dataset::open(write_tokens(dir));
  const std::vector<int32_t> split = plain_read(ds.files()[0], "train");
  LoaderOptions lo;
  lo.context = kContext;
  SamplerOptions one{.seed = 11, .world_size = 1, .rank = 0, .batch_per_rank = 4};
  TrainLoader single(ds, one, lo);
  lo.prefetch_depth = 0;  // one rank prefetched, the other synchronous: the same batches
  TrainLoader r0(ds, SamplerOptions{.seed = 11, .world_size = 2, .rank = 0, .batch_per_rank = 2}, lo);
  lo.prefetch_depth = 3;
  TrainLoader r1(ds, SamplerOptions{.seed = 11, .world_size = 2, .rank = 1, .batch_per_rank = 2}, lo);
  ASSERT_NE(single.sampler(), nullptr);
  EXPECT_EQ(single.sampler()->options().dataset_size, 40);
  EXPECT_EQ(single.steps_per_epoch(), 10);
  EXPECT_EQ(r0.steps_per_epoch(), 10);
  for (int64_t epoch : {0, 1}) {
    single.start_epoch(epoch);
    r0.start_epoch(epoch);
    r1.start_epoch(epoch);
    std::vector<int> seen(40, 0);
    Batch b, b0, b1;
    int64_t steps = 0;
    while (single.next(b)) {
      ASSERT_TRUE(r0.next(b0));
      ASSERT_TRUE(r1.next(b1));
      ASSERT_EQ(b.size, 4);
      ASSERT_EQ(b0.size, 2);
      std::vector<int64_t> both = b0.indices;
      both.insert(both.end(), b1.indices.begin(), b1.indices.end());
      EXPECT_EQ(both, b.indices) << "epoch " << epoch << " step " << steps;
      std::vector<int32_t> tokens = b0.tokens, y = b0.y;
      tokens.insert(tokens.end(), b1.tokens.begin(), b1.tokens.end());
      y.insert(y.end(), b1.y.begin(), b1.y.end());
      EXPECT_EQ(tokens, b.tokens);
      EXPECT_EQ(y, b.y);
      expect_windows_match(b, split, kContext);
      expect_windows_match(b1, split, kContext);
      for (int64_t i : b.indices) ++seen[static_cast<std::size_t>(i)];
      EXPECT_EQ(b.epoch, epoch);
      EXPECT_EQ(b.step, steps);
      ++steps;
    }
    EXPECT_EQ(steps, 10);
    EXPECT_FALSE(r0.next(b0));
    EXPECT_FALSE(r1.next(b1));
    for (int c : seen) EXPECT_EQ(c, 1);  // 40 windows = 10 steps x 4: every window once per epoch
  }
}

TEST(TextTrainLoader, FarApartWindowsAreReadSeparately) {
  TempDir dir;
  const std::string path = dir.file("long.h5");
  const int64_t n = 30001, context = 300;  // 100 windows; a read skips at most 1024 tokens (3 windows)
  std::vector<uint32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(token_of(i, 0));
  TokenWriter w(path, TokenHeader{kVocab, "t"}, n, 1);
  w.append("train", t.data(), n);
  w.append("test", t.data(), 1);
  w.close();
  const Dataset ds = Dataset::open(path);
  const std::vector<int32_t> split = plain_read(path, "train");
  LoaderOptions lo;
  lo.context = context;
  TrainLoader loader(ds, SamplerOptions{.seed = 5, .world_size = 3, .rank = 2, .batch_per_rank = 8}, lo);
  EXPECT_EQ(loader.steps_per_epoch(), 4);
  loader.start_epoch(0);
  Batch b;
  while (loader.next(b)) expect_windows_match(b, split, context);
}

TEST(TextTrainLoader, ResumeMidEpochMatchesTheFullEpoch) {
  TempDir dir;
  const Dataset ds = Dataset::open(write_tokens(dir));
  LoaderOptions lo;
  lo.context = 3;
  const SamplerOptions so{.seed = 2, .world_size = 1, .rank = 0, .batch_per_rank = 5};
  TrainLoader full(ds, so, lo), resumed(ds, so, lo);
  full.start_epoch(4);
  resumed.start_epoch(4, 6);
  Batch a, b;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(full.next(a));
  while (full.next(a)) {
    ASSERT_TRUE(resumed.next(b));
    EXPECT_EQ(a.indices, b.indices);
    EXPECT_EQ(a.tokens, b.tokens);
  }
  EXPECT_FALSE(resumed.next(b));
}

TEST(TextEvalLoader, RanksCoverEveryWindowOnceInOrder) {
  TempDir dir;
  const Dataset ds = Dataset::open(write_tokens(dir));
  const std::vector<int32_t> split = plain_read(ds.files()[0], "test");
  const int64_t windows = window_count(kTest, kContext);  // 11
  for (int world : {1, 2, 3, 4}) {
    std::vector<int64_t> all;
    for (int rank = 0; rank < world; ++rank) {
      EvalLoader ev(ds, "test", world, rank, 3, kContext);
      EXPECT_EQ(ev.first_index(), windows * rank / world);
      EXPECT_EQ(ev.count(), windows * (rank + 1) / world - windows * rank / world);
      EXPECT_EQ(ev.num_batches(), (ev.count() + 2) / 3);
      for (int pass = 0; pass < 2; ++pass) {  // reset() starts over
        Batch b;
        int64_t batches = 0;
        while (ev.next(b)) {
          EXPECT_LE(b.size, 3);
          expect_windows_match(b, split, kContext);
          if (pass == 0) all.insert(all.end(), b.indices.begin(), b.indices.end());
          ++batches;
        }
        EXPECT_EQ(batches, ev.num_batches());
        ev.reset();
      }
    }
    std::vector<int64_t> want(static_cast<std::size_t>(windows));
    for (int64_t i = 0; i < windows; ++i) want[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(all, want) << "world " << world;
  }
}

TEST(TextErrors, ContextIsRequiredAndMustFit) {
  TempDir dir;
  const Dataset ds = Dataset::open(write_tokens(dir));
  const SamplerOptions so{.seed = 0, .world_size = 1, .rank = 0, .batch_per_rank = 2};
  LoaderOptions lo;
  expect_has(error_of([&] { TrainLoader(ds, so, lo); }, ErrorKind::kInvalidArgument), {"context", ">= 1", "got 0"});
  expect_has(error_of([&] { EvalLoader(ds, "test", 1, 0, 4); }, ErrorKind::kInvalidArgument), {"context", ">= 1"});
  lo.context = 300;
  expect_has(error_of([&] { TrainLoader(ds, so, lo); }, ErrorKind::kInvalidArgument),
             {"split '/train'", "203 tokens = 0 windows of context 300", "1 ranks x 2 = 2 windows"});
  expect_has(error_of([&] { EvalLoader(ds, "test", 1, 0, 4, 300); }, ErrorKind::kInvalidArgument),
             {"split '/test'", "57 tokens = 0 windows of context 300"});
  lo.context = kContext;
  const SamplerOptions wide{.seed = 0, .world_size = 4, .rank = 1, .batch_per_rank = 20};
  expect_has(error_of([&] { TrainLoader(ds, wide, lo); }, ErrorKind::kInvalidArgument),
             {"203 tokens = 40 windows of context 5", "4 ranks x 20 = 80 windows"});
  SamplerOptions sized = so;
  sized.dataset_size = kTrain;  // tokens, not windows
  expect_has(error_of([&] { TrainLoader(ds, sized, lo); }, ErrorKind::kInvalidArgument),
             {"dataset_size 203", "40 windows"});
  sized.dataset_size = 40;
  EXPECT_NO_THROW(TrainLoader(ds, sized, lo));
}

TEST(TextErrors, FilesShardingAndAugmentationRefused) {
  TempDir dir;
  const Dataset ds = Dataset::open(write_tokens(dir));
  const SamplerOptions so{.seed = 0, .world_size = 1, .rank = 0, .batch_per_rank = 2};
  LoaderOptions lo;
  lo.context = kContext;
  lo.sharding = Sharding::kFiles;
  expect_has(error_of([&] { TrainLoader(ds, so, lo); }, ErrorKind::kInvalidArgument), {"--sharding files", "token"});
  lo.sharding = Sharding::kIndex;
  lo.augment.hflip = true;
  expect_has(error_of([&] { TrainLoader(ds, so, lo); }, ErrorKind::kInvalidArgument), {"augmentation", "token"});
}

TEST(TextErrors, ContextRefusedForSamples) {
  TempDir dir;
  test::write_id_dataset(dir.file("id.h5"), test::IdSpec{});
  const Dataset ds = Dataset::open(dir.file("id.h5"));
  LoaderOptions lo;
  lo.context = 4;
  expect_has(error_of([&] { TrainLoader(ds, SamplerOptions{.batch_per_rank = 2}, lo); }, ErrorKind::kInvalidArgument),
             {"context 4", "token datasets"});
  expect_has(error_of([&] { EvalLoader(ds, "test", 1, 0, 4, 4); }, ErrorKind::kInvalidArgument),
             {"context 4", "token datasets"});
}

TEST(TextErrors, TokenOutOfVocabularyOnOpen) {
  TempDir dir;
  const std::string path = write_tokens(dir);
  test::poke_label(path, "/test/tokens", 41, static_cast<int32_t>(kVocab));  // HDF5 converts to the stored uint16
  expect_has(error_of([&] { Dataset::open(path); }, ErrorKind::kFormat),
             {path, "'/test/tokens'", "token 1000 at position 41 of split '/test'", "< 1000 (vocab_size)"});
}

TEST(TextErrors, WriterRefusesATokenOutOfVocabulary) {
  TempDir dir;
  TokenWriter w(dir.file("w.h5"), TokenHeader{10, "t"}, 2, 1);
  const uint32_t t[] = {3, 10};
  expect_has(error_of([&] { w.append("train", t, 2); }, ErrorKind::kInvalidArgument), {"token 10 at position 1"});
}

TEST(WriteText, TokensAreTheBytesSplitByTheFraction) {
  TempDir dir;
  const std::string a = "To be, or not to be", b = ": that is the question.\n";
  std::ofstream(dir.file("a.txt"), std::ios::binary) << a;
  std::ofstream(dir.file("b.txt"), std::ios::binary) << b;
  const TextSummary s = write_text_dataset(dir.file("s.h5"), {dir.file("a.txt"), dir.file("b.txt")},
                                           TextOptions{.tokenizer = "bytes", .test_fraction = 0.3});
  const std::string text = a + b;
  const auto n = static_cast<int64_t>(text.size());
  EXPECT_EQ(s.train_tokens, text_train_bytes(n, 0.3));
  EXPECT_EQ(s.train_bytes, s.train_tokens);  // bytes: one token a byte, recorded as the split's text size
  EXPECT_EQ(s.test_bytes, s.test_tokens);
  EXPECT_EQ(s.train_tokens, static_cast<int64_t>(n * 0.7));
  EXPECT_EQ(s.train_tokens + s.test_tokens, n);
  EXPECT_EQ(s.vocab_size, 256);
  const Dataset ds = Dataset::open(dir.file("s.h5"));
  EXPECT_EQ(ds.info().tokenizer, "bytes");
  std::vector<int32_t> all = plain_read(dir.file("s.h5"), "train");
  const std::vector<int32_t> test = plain_read(dir.file("s.h5"), "test");
  all.insert(all.end(), test.begin(), test.end());
  ASSERT_EQ(static_cast<int64_t>(all.size()), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], static_cast<unsigned char>(text[i]));
}

TEST(WriteText, RefusesBadInput) {
  TempDir dir;
  std::ofstream(dir.file("empty.txt"));
  std::ofstream(dir.file("x.txt")) << "x";
  std::ofstream(dir.file("ok.txt")) << "some text of a few tokens";
  const std::string out = dir.file("o.h5");
  auto write = [&](std::vector<std::string> in, TextOptions o) { write_text_dataset(out, in, o); };
  expect_has(error_of([&] { write({dir.file("empty.txt")}, {}); }, ErrorKind::kInvalidArgument), {"empty"});
  expect_has(error_of([&] { write({dir.file("x.txt")}, {}); }, ErrorKind::kInvalidArgument),
             {"too short", "1 bytes", "0 train"});
  for (double f : {0.0, 1.0, -0.1, 1.5}) {
    expect_has(error_of([&] { write({dir.file("ok.txt")}, TextOptions{.test_fraction = f}); },
                        ErrorKind::kInvalidArgument),
               {"--test-fraction", "between 0 and 1"});
  }
  expect_has(error_of([&] { write({dir.file("ok.txt")}, TextOptions{.tokenizer = "gpt9"}); },
                      ErrorKind::kInvalidArgument),
             {"unknown tokenizer 'gpt9'", "'bytes'"});
  expect_has(error_of([&] { write({dir.file("ok.txt"), dir.file("missing.txt")}, {}); }, ErrorKind::kIo),
             {"missing.txt", "does not exist"});
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 3);
}

}  // namespace
}  // namespace mirror::data
