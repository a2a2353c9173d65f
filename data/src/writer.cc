// writer.cc — DatasetWriter: creates the shard files, their attributes and chunked x/y datasets, and
// routes appended samples to the shard that owns them.
#include "mirror/data/writer.h"

#include <algorithm>

#include "h5.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

struct SplitOut {
  h5::Id x, y;
  int64_t size = 0;     // samples in this shard
  int64_t written = 0;  // appended so far
};

struct ShardOut {
  std::string path;
  h5::Id file;
  SplitOut train, test;
};

}  // namespace

struct DatasetWriter::Impl {
  DatasetHeader header;
  WriteOptions options;
  int64_t features = 1;
  std::vector<std::string> files;
  std::vector<ShardOut> shards;
  int64_t split_total[2] = {0, 0};
  int64_t split_written[2] = {0, 0};
  bool closed = false;

  SplitOut& split_of(ShardOut& s, int which) { return which == 0 ? s.train : s.test; }

  void create_split(ShardOut& shard, SplitOut& out, const char* name, int64_t n) {
    h5::Id group(H5Gcreate2(shard.file.get(), name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    MIRROR_CHECK_HDF5(group.get(), "creating group '" << name << "' in '" << shard.path << "'");
    const std::size_t row_bytes = static_cast<std::size_t>(features) * dtype_size(header.x_dtype);
    int64_t chunk = options.chunk_samples > 0 ? options.chunk_samples
                                              : std::max<int64_t>(1, static_cast<int64_t>((256 << 10) / row_bytes));
    chunk = std::max<int64_t>(1, std::min(chunk, std::max<int64_t>(n, 1)));
    std::vector<hsize_t> dims{static_cast<hsize_t>(n)};
    std::vector<hsize_t> cdims{static_cast<hsize_t>(chunk)};
    for (int64_t d : header.sample_shape) {
      dims.push_back(static_cast<hsize_t>(d));
      cdims.push_back(static_cast<hsize_t>(d));
    }
    h5::Id xspace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    h5::Id xplist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (n > 0) {
      MIRROR_CHECK_HDF5(H5Pset_chunk(xplist.get(), static_cast<int>(cdims.size()), cdims.data()), "setting x chunks");
      if (options.gzip_level > 0) MIRROR_CHECK_HDF5(H5Pset_deflate(xplist.get(), options.gzip_level), "setting deflate");
    }
    const hid_t xtype = header.x_dtype == DType::kUInt8 ? H5T_STD_U8LE : H5T_IEEE_F32LE;
    out.x = h5::Id(H5Dcreate2(group.get(), "x", xtype, xspace.get(), H5P_DEFAULT, xplist.get(), H5P_DEFAULT), H5Dclose);
    MIRROR_CHECK_HDF5(out.x.get(), "creating '/" << name << "/x' in '" << shard.path << "'");
    const hsize_t yn = static_cast<hsize_t>(n);
    h5::Id yspace(H5Screate_simple(1, &yn, nullptr), H5Sclose);
    out.y = h5::Id(H5Dcreate2(group.get(), "y", H5T_STD_I32LE, yspace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                   H5Dclose);
    MIRROR_CHECK_HDF5(out.y.get(), "creating '/" << name << "/y' in '" << shard.path << "'");
    out.size = n;
  }

  void write_rows(ShardOut& shard, SplitOut& out, const char* x, const int32_t* y, int64_t count) {
    const std::size_t nd = header.sample_shape.size() + 1;
    std::vector<hsize_t> start(nd, 0), cnt(nd);
    start[0] = static_cast<hsize_t>(out.written);
    cnt[0] = static_cast<hsize_t>(count);
    for (std::size_t i = 1; i < nd; ++i) cnt[i] = static_cast<hsize_t>(header.sample_shape[i - 1]);
    h5::Id fs = h5::dataset_space(out.x.get());
    MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr), "select x");
    h5::Id ms(H5Screate_simple(static_cast<int>(nd), cnt.data(), nullptr), H5Sclose);
    const hid_t mtype = header.x_dtype == DType::kUInt8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT;
    MIRROR_CHECK_HDF5(H5Dwrite(out.x.get(), mtype, ms.get(), fs.get(), H5P_DEFAULT, x), "writing x of '" << shard.path << "'");
    h5::Id yfs = h5::dataset_space(out.y.get());
    MIRROR_CHECK_HDF5(H5Sselect_hyperslab(yfs.get(), H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr), "select y");
    h5::Id yms(H5Screate_simple(1, cnt.data(), nullptr), H5Sclose);
    MIRROR_CHECK_HDF5(H5Dwrite(out.y.get(), H5T_NATIVE_INT32, yms.get(), yfs.get(), H5P_DEFAULT, y),
                      "writing y of '" << shard.path << "'");
    out.written += count;
  }
};

DatasetWriter::DatasetWriter(const std::string& path, const DatasetHeader& header, int64_t train_size,
                             int64_t test_size, const WriteOptions& options)
    : impl_(std::make_unique<Impl>()) {
  MIRROR_CHECK(header.num_classes >= 1, kInvalidArgument, "writing '" << path << "': num_classes must be >= 1");
  MIRROR_CHECK(!header.sample_shape.empty(), kInvalidArgument, "writing '" << path << "': sample_shape is empty");
  for (int64_t d : header.sample_shape)
    MIRROR_CHECK(d >= 1, kInvalidArgument, "writing '" << path << "': sample_shape dimensions must be >= 1");
  MIRROR_CHECK(header.class_names.empty() || static_cast<int64_t>(header.class_names.size()) == header.num_classes,
               kInvalidArgument, "writing '" << path << "': " << header.class_names.size() << " class names for "
                                             << header.num_classes << " classes; expected one name per class or none");
  MIRROR_CHECK(train_size >= 0 && test_size >= 0, kInvalidArgument, "writing '" << path << "': negative split size");
  MIRROR_CHECK(options.shards >= 1 && options.shards <= 99999, kInvalidArgument,
               "writing '" << path << "': --shards must be in 1..99999, got " << options.shards);
  MIRROR_CHECK(options.gzip_level >= 0 && options.gzip_level <= 9, kInvalidArgument,
               "writing '" << path << "': gzip level must be in 0..9, got " << options.gzip_level);
  Impl& m = *impl_;
  m.header = header;
  m.options = options;
  for (int64_t d : header.sample_shape) m.features *= d;
  m.split_total[0] = train_size;
  m.split_total[1] = test_size;
  const int64_t k = options.shards;
  for (int64_t s = 0; s < k; ++s) {
    ShardOut shard;
    shard.path = shard_path(path, s, k);
    shard.file = h5::create_file(shard.path);
    const hid_t f = shard.file.get();
    h5::write_int_attr(f, "format_version", {kFormatVersion});
    h5::write_int_attr(f, "num_classes", {header.num_classes});
    h5::write_int_attr(f, "sample_shape", header.sample_shape);
    h5::write_int_attr(f, "shard_index", {s});
    h5::write_int_attr(f, "shard_count", {k});
    h5::write_double_attr(f, "x_scale", header.scaling.scale);
    h5::write_double_attr(f, "x_mean", header.scaling.mean);
    h5::write_double_attr(f, "x_std", header.scaling.std);
    if (!header.class_names.empty()) h5::write_string_attr(f, "class_names", header.class_names);
    m.create_split(shard, shard.train, "train", train_size * (s + 1) / k - train_size * s / k);
    m.create_split(shard, shard.test, "test", test_size * (s + 1) / k - test_size * s / k);
    m.files.push_back(shard.path);
    m.shards.push_back(std::move(shard));
  }
}

DatasetWriter::~DatasetWriter() = default;  // h5::Id members close quietly

void DatasetWriter::append(const std::string& split, const void* x, const int32_t* y, int64_t count) {
  Impl& m = *impl_;
  MIRROR_CHECK(!m.closed, kInvalidArgument, "DatasetWriter::append after close()");
  MIRROR_CHECK(split == "train" || split == "test", kInvalidArgument,
               "unknown split '" << split << "'; expected 'train' or 'test'");
  const int which = split == "train" ? 0 : 1;
  MIRROR_CHECK(count >= 0 && m.split_written[which] + count <= m.split_total[which], kInvalidArgument,
               "appending " << count << " samples to split '" << split << "' would exceed its size "
                            << m.split_total[which] << " (" << m.split_written[which] << " written)");
  for (int64_t i = 0; i < count; ++i) {
    MIRROR_CHECK(y[i] >= 0 && y[i] < m.header.num_classes, kInvalidArgument,
                 "label " << y[i] << " of sample " << (m.split_written[which] + i) << " in split '" << split
                          << "' is out of range; expected 0 <= label < " << m.header.num_classes);
  }
  const std::size_t row_bytes = static_cast<std::size_t>(m.features) * dtype_size(m.header.x_dtype);
  const char* xp = static_cast<const char*>(x);
  for (ShardOut& shard : m.shards) {
    if (count == 0) break;
    SplitOut& out = m.split_of(shard, which);
    const int64_t room = out.size - out.written;
    if (room <= 0) continue;
    const int64_t n = std::min(room, count);
    m.write_rows(shard, out, xp, y, n);
    xp += static_cast<std::size_t>(n) * row_bytes;
    y += n;
    count -= n;
    m.split_written[which] += n;
  }
}

void DatasetWriter::close() {
  Impl& m = *impl_;
  if (m.closed) return;
  for (int which = 0; which < 2; ++which) {
    MIRROR_CHECK(m.split_written[which] == m.split_total[which], kInvalidArgument,
                 "closing '" << m.files[0] << "': split '" << (which ? "test" : "train") << "' got "
                             << m.split_written[which] << " samples; expected " << m.split_total[which]);
  }
  for (ShardOut& shard : m.shards) {
    MIRROR_CHECK_HDF5(H5Fflush(shard.file.get(), H5F_SCOPE_LOCAL), "flushing '" << shard.path << "'");
    shard.train = {};
    shard.test = {};
    shard.file.reset();
  }
  m.closed = true;
}

const std::vector<std::string>& DatasetWriter::files() const { return impl_->files; }

}  // namespace mirror::data
