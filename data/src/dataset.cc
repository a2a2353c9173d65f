// dataset.cc — Dataset::open: opens every shard file, checks it against the format, and checks that the
// shards agree with each other. All messages name the file, the dataset or attribute, and the expectation.
#include "mirror/data/dataset.h"

#include <algorithm>
#include <sstream>

#include "h5.h"
#include "mirror/error.h"
#include "shard_names.h"
#include "token_dataset.h"

namespace mirror::data {

const char* to_string(DType type) { return type == DType::kUInt8 ? "uint8" : "float32"; }
std::size_t dtype_size(DType type) { return type == DType::kUInt8 ? 1 : 4; }

namespace {

constexpr const char* kDoc = "(see docs/dataset-format.md)";
constexpr int64_t kMaxClasses = int64_t{1} << 24;

// What one shard file holds, before the shards are compared with each other.
struct ShardHeader {
  int64_t format_version = 0, num_classes = 0, shard_index = 0, shard_count = 1;
  std::vector<int64_t> sample_shape;
  Scaling scaling;
  std::vector<std::string> class_names;
};

std::string shape_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? " x " : "") << v[i];
  return os.str();
}

int64_t required_int(hid_t root, const std::string& file, const char* name) {
  auto v = h5::read_int_attr(root, name, "file '" + file + "'");
  MIRROR_CHECK(v.has_value(), kFormat,
               "file '" << file << "': attribute '" << name << "' missing on '/'; expected an integer " << kDoc);
  MIRROR_CHECK(v->size() == 1, kFormat, "file '" << file << "': attribute '" << name << "' has " << v->size()
                                                 << " elements; expected one integer");
  return (*v)[0];
}

ShardHeader read_header(hid_t root, const std::string& file) {
  ShardHeader h;
  h.format_version = required_int(root, file, "format_version");
  MIRROR_CHECK(h.format_version == kFormatVersion, kFormat,
               "file '" << file << "': format_version is " << h.format_version << "; expected " << kFormatVersion);
  h.num_classes = required_int(root, file, "num_classes");
  // Bounded so that the class histograms (8 bytes per class and split, allocated on open) stay small: a
  // damaged count must not make a 20 KB file allocate gigabytes.
  MIRROR_CHECK(h.num_classes >= 1 && h.num_classes <= kMaxClasses, kFormat,
               "file '" << file << "': num_classes is " << h.num_classes << "; expected a positive count up to "
                        << kMaxClasses);
  auto shape = h5::read_int_attr(root, "sample_shape", "file '" + file + "'");
  MIRROR_CHECK(shape.has_value(), kFormat,
               "file '" << file << "': attribute 'sample_shape' missing on '/'; expected the shape of one sample " << kDoc);
  MIRROR_CHECK(shape->size() <= 8, kFormat, "file '" << file << "': sample_shape has " << shape->size()
                                                     << " dimensions; expected at most 8");
  for (int64_t d : *shape) {
    MIRROR_CHECK(d >= 1, kFormat, "file '" << file << "': sample_shape " << shape_str(*shape)
                                           << " has a dimension < 1; expected positive dimensions");
  }
  int64_t features = 1;
  for (int64_t d : *shape) {
    MIRROR_CHECK(d <= (int64_t{1} << 31) / features, kFormat,
                 "file '" << file << "': sample_shape " << shape_str(*shape) << " has more than 2^31 features");
    features *= d;
  }
  h.sample_shape = *shape;
  if (auto v = h5::read_int_attr(root, "shard_index", "file '" + file + "'")) h.shard_index = (*v)[0];
  if (auto v = h5::read_int_attr(root, "shard_count", "file '" + file + "'")) h.shard_count = (*v)[0];
  const std::string where = "file '" + file + "'";
  h.scaling.scale = h5::read_double_attr(root, "x_scale", where).value_or(1.0);
  h.scaling.mean = h5::read_double_attr(root, "x_mean", where).value_or(0.0);
  h.scaling.std = h5::read_double_attr(root, "x_std", where).value_or(1.0);
  MIRROR_CHECK(h.scaling.std > 0, kFormat, "file '" << file << "': attribute x_std is " << h.scaling.std
                                                    << "; expected a positive number");
  if (auto names = h5::read_string_attr(root, "class_names", where)) {
    MIRROR_CHECK(static_cast<int64_t>(names->size()) == h.num_classes, kFormat,
                 "file '" << file << "': attribute class_names has " << names->size() << " names for num_classes "
                          << h.num_classes << "; expected one name per class");
    h.class_names = *names;
  }
  return h;
}

DType check_x_type(hid_t dset, const std::string& file, const std::string& name) {
  h5::Id t = h5::dataset_type(dset);
  const H5T_class_t cls = H5Tget_class(t.get());
  const std::size_t size = H5Tget_size(t.get());
  if (cls == H5T_INTEGER && size == 1 && H5Tget_sign(t.get()) == H5T_SGN_NONE) return DType::kUInt8;
  if (cls == H5T_FLOAT && size == 4) return DType::kFloat32;
  MIRROR_THROW(kFormat, "file '" << file << "' dataset '" << name << "' has the wrong dtype (class " << cls << ", "
                                 << size << " bytes); expected uint8 or float32");
}

// Labels may be stored as any integer type (h5py writes numpy's default int64); every value is range-checked
// on open, so the reader's conversion to int32 is exact.
void check_y_type(hid_t dset, const std::string& file, const std::string& name) {
  h5::Id t = h5::dataset_type(dset);
  MIRROR_CHECK(H5Tget_class(t.get()) == H5T_INTEGER && H5Tget_size(t.get()) <= 8, kFormat,
               "file '" << file << "' dataset '" << name << "' has the wrong dtype; expected integer class ids "
                        << "(int32 as mirror-data writes them; int8..int64 and uint8..uint64 are accepted)");
}

// Reads y in blocks, checks every label is in [0, num_classes) and adds it to the histogram.
void check_labels(hid_t dset, int64_t n, int64_t num_classes, const std::string& file, const std::string& name,
                  std::vector<int64_t>& counts) {
  constexpr int64_t kBlock = 1 << 16;
  std::vector<int64_t> buf;  // int64: a wider stored label cannot be clipped into range by the conversion
  h5::Id fspace = h5::dataset_space(dset);
  for (int64_t first = 0; first < n; first += kBlock) {
    const hsize_t start = static_cast<hsize_t>(first);
    const hsize_t count = static_cast<hsize_t>(std::min(kBlock, n - first));
    buf.resize(count);
    MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr), "selecting y");
    h5::Id mspace(H5Screate_simple(1, &count, nullptr), H5Sclose);
    MIRROR_CHECK_HDF5(H5Dread(dset, H5T_NATIVE_INT64, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()),
                      "reading '" << name << "' of '" << file << "'");
    for (hsize_t i = 0; i < count; ++i) {
      const int64_t label = buf[i];
      MIRROR_CHECK(label >= 0 && label < num_classes, kFormat,
                   "file '" << file << "' dataset '" << name << "': label " << label << " at index " << (first + i)
                            << " is out of range; expected 0 <= label < " << num_classes << " (num_classes)");
      ++counts[static_cast<std::size_t>(label)];
    }
  }
}

// Checks one split of one shard file; returns its sample count and x dtype; fills the histogram.
int64_t check_split(hid_t root, const std::string& file, const ShardHeader& h, const std::string& split, DType& dtype,
                    std::vector<int64_t>& counts, int64_t& chunk_samples) {
  const std::string g = "/" + split;
  MIRROR_CHECK(h5::link_exists(root, g), kFormat,
               "file '" << file << "': split '" << g << "' missing; expected groups /train and /test " << kDoc);
  const std::string xn = g + "/x", yn = g + "/y";
  MIRROR_CHECK(h5::link_exists(root, xn), kFormat,
               "file '" << file << "': dataset '" << xn << "' missing; expected N x sample shape samples " << kDoc);
  MIRROR_CHECK(h5::link_exists(root, yn), kFormat,
               "file '" << file << "': dataset '" << yn << "' missing; expected N int32 labels " << kDoc);
  h5::Id x = h5::open_dataset(root, xn, file);
  h5::Id y = h5::open_dataset(root, yn, file);
  dtype = check_x_type(x.get(), file, xn);
  check_y_type(y.get(), file, yn);
  h5::check_storage(x.get(), file, xn);
  h5::check_storage(y.get(), file, yn);
  const auto xd = h5::dims_of(x.get());
  const auto yd = h5::dims_of(y.get());
  std::vector<int64_t> want{-1};
  want.insert(want.end(), h.sample_shape.begin(), h.sample_shape.end());
  bool shape_ok = xd.size() == want.size();
  for (std::size_t i = 1; shape_ok && i < xd.size(); ++i) shape_ok = xd[i] == want[i];
  MIRROR_CHECK(shape_ok, kFormat, "file '" << file << "' dataset '" << xn << "' has shape " << shape_str(xd)
                                           << "; expected N x " << shape_str(h.sample_shape) << " (sample_shape)");
  MIRROR_CHECK(yd.size() == 1, kFormat, "file '" << file << "' dataset '" << yn << "' has shape " << shape_str(yd)
                                                 << "; expected a vector of N labels");
  MIRROR_CHECK(xd[0] == yd[0], kFormat, "file '" << file << "': x/y length mismatch in split '" << g << "': '" << xn
                                                 << "' has " << xd[0] << " samples but '" << yn << "' has " << yd[0]
                                                 << "; expected equal N");
  check_labels(y.get(), yd[0], h.num_classes, file, yn, counts);
  if (chunk_samples == 0) {
    h5::Id plist(H5Dget_create_plist(x.get()), H5Pclose);
    if (H5Pget_layout(plist.get()) == H5D_CHUNKED) {
      std::vector<hsize_t> cd(xd.size());
      if (H5Pget_chunk(plist.get(), static_cast<int>(cd.size()), cd.data()) > 0) chunk_samples = static_cast<int64_t>(cd[0]);
    }
  }
  return xd[0];
}

}  // namespace

Dataset Dataset::open(const std::string& path) {
  const std::vector<std::string> files = resolve_shard_files(path);
  if (is_token_dataset(files[0])) return open_tokens(files);  // token_dataset.cc
  Dataset ds;
  ds.info_.files = files;
  ds.train_.name = "train";
  ds.test_.name = "test";
  ShardHeader first;
  DType first_dtype = DType::kUInt8;
  for (std::size_t s = 0; s < files.size(); ++s) {
    const std::string& file = files[s];
    h5::Id f = h5::open_file_readonly(file);
    h5::Id root = h5::open_group(f.get(), "/", file);
    const ShardHeader h = read_header(root.get(), file);
    const int64_t count = static_cast<int64_t>(files.size());
    MIRROR_CHECK(h.shard_count == count && h.shard_index == static_cast<int64_t>(s), kFormat,
                 "shard files disagree: '" << file << "' says it is shard " << h.shard_index << " of " << h.shard_count
                                           << "; expected shard " << s << " of " << count << " from the file names");
    if (s == 0) {
      first = h;
      ds.train_.class_counts.assign(static_cast<std::size_t>(h.num_classes), 0);
      ds.test_.class_counts.assign(static_cast<std::size_t>(h.num_classes), 0);
    } else {
      const std::string& f0 = files[0];
      MIRROR_CHECK(h.num_classes == first.num_classes, kFormat,
                   "shard files disagree: '" << f0 << "' has num_classes " << first.num_classes << " but '" << file
                                             << "' has " << h.num_classes);
      MIRROR_CHECK(h.sample_shape == first.sample_shape, kFormat,
                   "shard files disagree: '" << f0 << "' has sample_shape " << shape_str(first.sample_shape) << " but '"
                                             << file << "' has " << shape_str(h.sample_shape));
      MIRROR_CHECK(h.scaling.scale == first.scaling.scale && h.scaling.mean == first.scaling.mean &&
                       h.scaling.std == first.scaling.std,
                   kFormat, "shard files disagree: '" << f0 << "' and '" << file << "' have different x_scale/x_mean/x_std");
      MIRROR_CHECK(h.class_names == first.class_names, kFormat,
                   "shard files disagree: '" << f0 << "' and '" << file << "' have different class_names");
    }
    for (SplitInfo* split : {&ds.train_, &ds.test_}) {
      DType dtype;
      const int64_t n = check_split(root.get(), file, h, split->name, dtype, split->class_counts, split->chunk_samples);
      if (s == 0 && split == &ds.train_) first_dtype = dtype;
      MIRROR_CHECK(dtype == first_dtype, kFormat,
                   "shard files disagree: '" << files[0] << "' /train/x is " << to_string(first_dtype) << " but '"
                                             << file << "' /" << split->name << "/x is " << to_string(dtype)
                                             << "; expected one x dtype for the whole dataset");
      split->shard_sizes.push_back(n);
      split->size += n;
    }
  }
  for (const SplitInfo* split : {&ds.train_, &ds.test_}) {
    MIRROR_CHECK(split->size > 0, kFormat, "dataset " << ds.describe() << ": split '/" << split->name
                                                      << "' is empty (0 samples in " << files.size()
                                                      << " file(s)); expected at least one sample");
  }
  DatasetInfo& info = ds.info_;
  info.format_version = first.format_version;
  info.num_classes = first.num_classes;
  info.sample_shape = first.sample_shape;
  info.features = 1;
  for (int64_t d : first.sample_shape) info.features *= d;
  info.x_dtype = first_dtype;
  info.scaling = first.scaling;
  info.class_names = first.class_names;
  info.train_size = ds.train_.size;
  info.test_size = ds.test_.size;
  return ds;
}

const SplitInfo& Dataset::split(const std::string& name) const {
  const std::string n = (!name.empty() && name[0] == '/') ? name.substr(1) : name;
  if (n == "train") return train_;
  if (n == "test") return test_;
  MIRROR_THROW(kInvalidArgument, "unknown split '" << name << "' of dataset " << describe() << "; expected 'train' or 'test'");
}

std::string Dataset::describe() const {
  std::ostringstream os;
  os << "'" << (info_.files.empty() ? std::string("?") : info_.files[0]) << "'";
  if (info_.files.size() > 1) os << " (+" << info_.files.size() - 1 << " more shards)";
  return os.str();
}

}  // namespace mirror::data
