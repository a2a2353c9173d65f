// importer.cc — import_dataset: checks the arrays' shapes, finds the classes (a pass over the labels), draws
// the --test-fraction split, then streams samples block by block through the checked conversions into a
// DatasetWriter on temporary names, and renames the finished files into place.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "import_sources.h"
#include "mirror/data/import.h"
#include "mirror/error.h"
#include "rng.h"
#include "value_convert.h"

namespace mirror::data {

namespace fs = std::filesystem;

SampleLayout parse_layout(const std::string& name) {
  if (name == "nchw") return SampleLayout::kChannelsFirst;
  if (name == "nhwc") return SampleLayout::kChannelsLast;
  MIRROR_THROW(kInvalidArgument, "unknown layout '" << name << "'; expected 'nchw' (as stored) or 'nhwc' (channels last)");
}

namespace {

constexpr std::size_t kBlockBytes = 4u << 20;  // input read per block
constexpr int64_t kMaxClasses = int64_t{1} << 24;

std::string shape_text(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

// The shape facts of one split's arrays, checked against each other.
struct SplitShape {
  int64_t rows = 0;
  std::vector<int64_t> source_sample;  // per-sample dims as the input has them
  ElemType x_type = ElemType::kFloat32;
};

SplitShape check_shapes(const SplitSource& src, const char* split) {
  auto x = src.x();
  auto y = src.y();
  SplitShape s{x->rows(), std::vector<int64_t>(x->shape().begin() + 1, x->shape().end()), x->type()};
  MIRROR_CHECK(s.rows >= 1, kFormat, split << " data " << x->name() << " has no samples (shape " << shape_text(x->shape()) << ")");
  const auto& ys = y->shape();
  MIRROR_CHECK(ys.size() == 1 || (ys.size() == 2 && ys[1] == 1), kFormat,
               split << " labels " << y->name() << " have shape " << shape_text(ys)
                     << "; expected one class id per sample, shape (N,) or (N, 1) (one-hot labels: use y.argmax(1))");
  MIRROR_CHECK(ys[0] == s.rows, kFormat,
               split << " data and labels have mismatched lengths: " << x->name() << " has " << s.rows << " samples (shape "
                     << shape_text(x->shape()) << ") but " << y->name() << " has " << ys[0] << " labels; expected equal N");
  if (s.source_sample.empty()) s.source_sample = {1};
  MIRROR_CHECK(s.source_sample.size() <= 8, kFormat,
               split << " data " << x->name() << " has " << s.source_sample.size() << " dimensions per sample; expected at most 8");
  double features = 1;
  for (int64_t d : s.source_sample) features *= static_cast<double>(d);
  MIRROR_CHECK(features >= 1 && features <= 2147483648.0, kFormat,
               split << " data " << x->name() << " has " << features << " values per sample; expected 1 .. 2^31");
  return s;
}

// The sample shape Mirror stores: as given, or (C, H, W) for channels-last (N, H, W, C) input.
std::vector<int64_t> stored_shape(const SplitShape& s, SampleLayout layout, const std::string& name) {
  if (layout == SampleLayout::kChannelsFirst) return s.source_sample;
  MIRROR_CHECK(s.source_sample.size() == 3, kInvalidArgument,
               "--layout nhwc needs samples of shape (H, W, C); " << name << " has samples of shape "
                                                                  << shape_text(s.source_sample));
  return {s.source_sample[2], s.source_sample[0], s.source_sample[1]};
}

// One pass over a split's labels: checks every one is in [0, limit), returns the largest.
int64_t scan_labels(const SplitSource& src, const char* split, int64_t limit) {
  auto y = src.y();
  const int64_t n = y->rows(), per_block = 1 << 16;
  std::vector<char> raw(static_cast<std::size_t>(per_block) * elem_size(y->type()));
  std::vector<int32_t> labels(static_cast<std::size_t>(per_block));
  int64_t largest = -1;
  for (int64_t first = 0; first < n; first += per_block) {
    const int64_t count = std::min(per_block, n - first);
    y->read(count, raw.data());
    convert_labels(raw.data(), y->type(), count, limit, {std::string(split) + " labels " + y->name(), first, {}}, labels.data());
    largest = std::max<int64_t>(largest, *std::max_element(labels.begin(), labels.begin() + count));
  }
  return largest;
}

// Which samples --test-fraction sends to the test split: exactly round(F * n) of the n, every such subset
// equally likely, drawn in one pass in sample order from the seed with no memory per sample (selection
// sampling, Knuth's Algorithm S: sample i is taken with probability still-needed / still-left).
class TestDraw {
 public:
  TestDraw(int64_t n, double fraction, uint64_t seed) : left_(n), rng_(mix_key(seed, 0x7e57)) {
    MIRROR_CHECK(fraction > 0 && fraction < 1, kInvalidArgument,
                 "no test set given: pass --test SRC2 (or --test-x/--test-y), or --test-fraction F with 0 < F < 1");
    count_ = needed_ = std::llround(fraction * static_cast<double>(n));
    MIRROR_CHECK(count_ >= 1 && count_ < n, kInvalidArgument,
                 "--test-fraction " << fraction << " of " << n << " samples gives " << count_
                                    << " test samples; expected at least one in each split");
  }
  int64_t count() const { return count_; }
  bool next_is_test() {
    const bool take = rng_.below(static_cast<uint64_t>(left_)) < static_cast<uint64_t>(needed_);
    --left_;
    needed_ -= take;
    return take;
  }

 private:
  int64_t left_, count_ = 0, needed_ = 0;
  Rng rng_;
};

struct Plan {
  DatasetHeader header;
  SampleLayout layout;
  std::vector<int64_t> source_sample;
};

// Streams one split source into the writer: samples go to `split`, or where `draw` sends them when given.
void copy_split(const SplitSource& src, const char* split, const Plan& plan, TestDraw* draw, DatasetWriter& writer) {
  auto x = src.x();
  auto y = src.y();
  const int64_t n = x->rows(), row_elems = x->row_elems();
  const std::size_t src_row = static_cast<std::size_t>(row_elems) * elem_size(x->type());
  const std::size_t out_row = static_cast<std::size_t>(row_elems) * dtype_size(plan.header.x_dtype);
  const int64_t per_block = std::max<int64_t>(1, std::min<int64_t>(n, static_cast<int64_t>(kBlockBytes / src_row)));
  std::vector<char> raw(static_cast<std::size_t>(per_block) * src_row), y_raw(static_cast<std::size_t>(per_block) * 8);
  std::vector<char> conv(static_cast<std::size_t>(per_block) * out_row), chw(conv.size());
  std::vector<int32_t> labels(static_cast<std::size_t>(per_block));
  std::vector<char> part_x[2];
  std::vector<int32_t> part_y[2];
  for (int64_t first = 0; first < n; first += per_block) {
    const int64_t count = std::min(per_block, n - first);
    x->read(count, raw.data());
    y->read(count, y_raw.data());
    convert_labels(y_raw.data(), y->type(), count, plan.header.num_classes,
                   {std::string(split) + " labels " + y->name(), first, {}}, labels.data());
    convert_x(raw.data(), x->type(), count, row_elems, plan.header.x_dtype,
              {std::string(split) + " data " + x->name(), first, plan.source_sample}, conv.data());
    const char* rows = conv.data();
    if (plan.layout == SampleLayout::kChannelsLast) {
      const auto& s = plan.source_sample;
      hwc_to_chw(conv.data(), count, s[0], s[1], s[2], dtype_size(plan.header.x_dtype), chw.data());
      rows = chw.data();
    }
    if (!draw) {
      writer.append(split, rows, labels.data(), count);
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      part_x[k].clear();
      part_y[k].clear();
    }
    for (int64_t i = 0; i < count; ++i) {
      const int k = draw->next_is_test() ? 1 : 0;
      part_x[k].insert(part_x[k].end(), rows + i * out_row, rows + (i + 1) * out_row);
      part_y[k].push_back(labels[static_cast<std::size_t>(i)]);
    }
    for (int k = 0; k < 2; ++k) {
      writer.append(k ? "test" : "train", part_x[k].data(), part_y[k].data(), static_cast<int64_t>(part_y[k].size()));
    }
  }
}

// The output's temporary names: hidden files next to it, removed unless commit() renamed them into place.
class TempOutput {
 public:
  TempOutput(const std::string& out, int64_t shards) : out_(out), shards_(shards) {
    const fs::path p(out);
    MIRROR_CHECK(p.extension() == ".h5", kInvalidArgument, "--out '" << out << "' must end in .h5");
    std::string tmp_name(1, '.');  // (not "." + stem: GCC 12 warns falsely about that concatenation)
    tmp_name += p.stem().string();
    tmp_name += ".importing-" + std::to_string(::getpid()) + ".h5";
    tmp_ = (p.has_parent_path() ? p.parent_path() / tmp_name : fs::path(tmp_name)).string();
  }
  ~TempOutput() {
    if (committed_) return;
    std::error_code ec;
    for (int64_t k = 0; k < shards_; ++k) fs::remove(shard_path(tmp_, k, shards_), ec);
  }
  const std::string& path() const { return tmp_; }
  std::vector<std::string> commit() {
    std::vector<std::string> files;
    for (int64_t k = 0; k < shards_; ++k) {
      files.push_back(shard_path(out_, k, shards_));
      std::error_code ec;
      fs::rename(shard_path(tmp_, k, shards_), files.back(), ec);
      MIRROR_CHECK(!ec, kIo, "cannot rename '" << shard_path(tmp_, k, shards_) << "' to '" << files.back() << "': " << ec.message());
    }
    committed_ = true;
    return files;
  }

 private:
  std::string out_, tmp_;
  int64_t shards_;
  bool committed_ = false;
};

int64_t class_count(const ImportOptions& o, const ImportSources& s, const std::vector<std::string>& names) {
  MIRROR_CHECK(o.num_classes >= 0 && o.num_classes <= kMaxClasses, kInvalidArgument,
               "--num-classes must be in 1.." << kMaxClasses << ", got " << o.num_classes);
  MIRROR_CHECK(names.empty() || o.num_classes == 0 || o.num_classes == static_cast<int64_t>(names.size()), kInvalidArgument,
               "--num-classes " << o.num_classes << " disagrees with the " << names.size() << " class names");
  const int64_t given = !names.empty() ? static_cast<int64_t>(names.size()) : o.num_classes;
  const int64_t limit = given > 0 ? given : kMaxClasses;
  int64_t largest = scan_labels(s.train, "train", limit);
  if (s.test) largest = std::max(largest, scan_labels(*s.test, "test", limit));
  return given > 0 ? given : largest + 1;
}

}  // namespace

ImportSummary import_dataset(const std::string& out, const ImportOptions& o) {
  const ImportSources sources = resolve_import_sources(o);
  MIRROR_CHECK(!sources.test || o.test_fraction == 0, kInvalidArgument,
               "give either a test set (--test, --test-x/--test-y) or --test-fraction, not both");
  const SplitShape train = check_shapes(sources.train, "train");
  std::optional<SplitShape> test;
  if (sources.test) {
    test = check_shapes(*sources.test, "test");
    MIRROR_CHECK(test->source_sample == train.source_sample, kFormat,
                 "the test samples have shape " << shape_text(test->source_sample) << " but the training samples "
                                                << shape_text(train.source_sample) << "; expected one sample shape");
  }
  Plan plan;
  plan.layout = o.layout;
  plan.source_sample = train.source_sample;
  DatasetHeader& h = plan.header;
  h.sample_shape = stored_shape(train, o.layout, sources.train.origin);
  h.x_dtype = o.x_dtype.value_or(default_x_dtype(train.x_type));
  h.scaling.scale = o.x_scale.value_or(h.x_dtype == DType::kUInt8 ? 1.0 / 255.0 : 1.0);
  MIRROR_CHECK(std::isfinite(h.scaling.scale) && h.scaling.scale != 0, kInvalidArgument,
               "--x-scale must be a finite, non-zero number, got " << h.scaling.scale);
  h.class_names = sources.train.class_names.empty() ? o.class_names : sources.train.class_names;
  h.num_classes = class_count(o, sources, h.class_names);

  ImportSummary summary{sources.kind, {}, train.rows, test ? test->rows : 0, h.num_classes, h.sample_shape, h.x_dtype};
  std::optional<TestDraw> draw;
  if (!test) {
    draw.emplace(train.rows, o.test_fraction, o.seed);
    summary.test = draw->count();
    summary.train = train.rows - summary.test;
  }
  std::error_code ec;
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path(), ec);
  TempOutput tmp(out, o.write.shards);
  {
    DatasetWriter writer(tmp.path(), h, summary.train, summary.test, o.write);
    copy_split(sources.train, "train", plan, draw ? &*draw : nullptr, writer);
    if (sources.test) copy_split(*sources.test, "test", plan, nullptr, writer);
    writer.close();
  }
  summary.files = tmp.commit();
  return summary;
}

}  // namespace mirror::data
