// checkpoint_io.cc — writes and reads one checkpoint file (HDF5): the header attributes with their own
// CRC-32, /params, /buffers and /optimizer tensors each with a CRC-32; atomic write through a temporary +
// rename; the tokenizer's files under /tokenizer, each with a CRC-32. Reads format versions 1 to 5
// (docs/checkpoint-format.md).
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "h5_file.h"
#include "mirror/train/checkpoint.h"

namespace mirror::train {
namespace {

constexpr const char* kFormatName = "mirror-checkpoint";
constexpr std::int64_t kOldestReadableVersion = 1;

std::uint32_t crc32_of(const void* data, std::size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {  // zlib takes uInt lengths
    const uInt chunk = bytes > (1u << 30) ? (1u << 30) : static_cast<uInt>(bytes);
    crc = crc32(crc, p, chunk);
    p += chunk;
    bytes -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string t;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) t += ',';
    t += std::to_string(shape[i]);
  }
  return t;
}

// The scalar header in one canonical string, so that one CRC covers every field. Version 2 adds the sample
// shape and the model description at the end; version 1's text is unchanged, so its CRCs still verify.
std::string header_text(const CheckpointState& s) {
  std::ostringstream o;
  o << "step=" << s.step << ";epoch=" << s.epoch << ";epoch_micro_step=" << s.epoch_micro_step
    << ";world_size=" << s.world_size << ";seed=" << s.seed << ";model_spec=" << s.model_spec
    << ";input_features=" << s.input_features << ";num_classes=" << s.num_classes
    << ";epoch_loss_sum=" << std::hexfloat << s.epoch_loss_sum << std::defaultfloat
    << ";epoch_correct=" << s.epoch_correct << ";epoch_samples=" << s.epoch_samples
    << ";optimizer_kind=" << s.optimizer_kind << ";optimizer_step=" << s.optimizer_step
    << ";config_json=" << s.config_json << ";metrics_jsonl=" << s.metrics_jsonl;
  if (s.format_version >= 2)
    o << ";sample_shape=" << shape_text(s.sample_shape) << ";model_description=" << s.model_description;
  if (s.format_version >= 3)
    o << ";loss_scale=" << std::hexfloat << s.loss_scale << std::defaultfloat
      << ";loss_scale_good_steps=" << s.loss_scale_good_steps;
  if (s.format_version >= 4) o << ";tokenizer=" << s.tokenizer;
  return o.str();
}

// Whether `shape` is a sample shape of 1 to 8 dimensions, each in [1, 2^30], holding `features` values.
bool holds(const std::vector<std::int64_t>& shape, std::int64_t features) {
  if (shape.empty() || shape.size() > 8) return false;
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 1 || d > (std::int64_t{1} << 30) || n > (std::int64_t{1} << 34) / d) return false;
    n *= d;
  }
  return n == features;
}

// ---- attribute helpers -------------------------------------------------------------------------

void write_attr(hid_t obj, const char* name, hid_t mem_type, const void* value) {
  h5::Handle space(MIRROR_CHECK_HDF5(H5Screate(H5S_SCALAR), name), H5Sclose);
  h5::Handle attr(MIRROR_CHECK_HDF5(H5Acreate2(obj, name, mem_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), name),
                  H5Aclose);
  MIRROR_CHECK_HDF5(H5Awrite(attr.get(), mem_type, value), name);
}

void write_i64(hid_t obj, const char* name, std::int64_t v) { write_attr(obj, name, H5T_NATIVE_INT64, &v); }
void write_u64(hid_t obj, const char* name, std::uint64_t v) { write_attr(obj, name, H5T_NATIVE_UINT64, &v); }
void write_u32(hid_t obj, const char* name, std::uint32_t v) { write_attr(obj, name, H5T_NATIVE_UINT32, &v); }
void write_f64(hid_t obj, const char* name, double v) { write_attr(obj, name, H5T_NATIVE_DOUBLE, &v); }

void write_i64_array(hid_t obj, const char* name, const std::vector<std::int64_t>& v) {
  const hsize_t n = v.size();
  h5::Handle space(MIRROR_CHECK_HDF5(H5Screate_simple(1, &n, nullptr), name), H5Sclose);
  h5::Handle attr(MIRROR_CHECK_HDF5(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                                    name),
                  H5Aclose);
  MIRROR_CHECK_HDF5(H5Awrite(attr.get(), H5T_NATIVE_INT64, v.data()), name);
}

void write_str(hid_t obj, const char* name, const std::string& v) {
  h5::Handle type(MIRROR_CHECK_HDF5(H5Tcopy(H5T_C_S1), name), H5Tclose);
  MIRROR_CHECK_HDF5(H5Tset_size(type.get(), v.empty() ? 1 : v.size()), name);
  MIRROR_CHECK_HDF5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), name);
  std::string padded = v.empty() ? std::string(1, '\0') : v;
  write_attr(obj, name, type.get(), padded.data());
}

// Long text (the configuration, the metrics so far) goes into a 1-D uint8 dataset: attributes are limited to
// 64 KiB in HDF5's default layout, and a long run's metrics exceed that.
void write_text(hid_t obj, const char* name, const std::string& text) {
  const hsize_t n = text.size();
  h5::Handle space(MIRROR_CHECK_HDF5(H5Screate_simple(1, &n, nullptr), name), H5Sclose);
  h5::Handle ds(MIRROR_CHECK_HDF5(H5Dcreate2(obj, name, H5T_STD_U8LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                             H5P_DEFAULT), name),
                H5Dclose);
  if (n > 0) MIRROR_CHECK_HDF5(H5Dwrite(ds.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), name);
}

class Reader {
 public:
  Reader(hid_t obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  h5::Handle open(const char* name) const {
    if (H5Aexists(obj_, name) <= 0)
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' is missing; not a complete Mirror checkpoint");
    return h5::Handle(MIRROR_CHECK_HDF5(H5Aopen(obj_, name, H5P_DEFAULT), path_ << " attribute " << name), H5Aclose);
  }
  // The attribute's dataspace must hold exactly one element: H5Aread writes all of them into the buffer.
  void check_one_element(hid_t attr, const char* name) const {
    h5::Handle space(MIRROR_CHECK_HDF5(H5Aget_space(attr), path_ << " attribute " << name), H5Sclose);
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' holds " << H5Sget_simple_extent_npoints(space.get())
                                  << " elements; expected one");
  }
  template <typename T>
  T scalar(const char* name, hid_t mem_type) const {
    h5::Handle attr = open(name);
    check_one_element(attr.get(), name);
    h5::Handle file_type(MIRROR_CHECK_HDF5(H5Aget_type(attr.get()), path_ << " attribute " << name), H5Tclose);
    const H5T_class_t cls = H5Tget_class(file_type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT)
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' is not a number");
    T v{};
    MIRROR_CHECK_HDF5(H5Aread(attr.get(), mem_type, &v), path_ << " attribute " << name);
    return v;
  }
  std::int64_t i64(const char* name) const { return scalar<std::int64_t>(name, H5T_NATIVE_INT64); }
  std::uint64_t u64(const char* name) const { return scalar<std::uint64_t>(name, H5T_NATIVE_UINT64); }
  std::uint32_t u32(const char* name) const { return scalar<std::uint32_t>(name, H5T_NATIVE_UINT32); }
  double f64(const char* name) const { return scalar<double>(name, H5T_NATIVE_DOUBLE); }
  std::string text(const char* name) const {
    if (H5Lexists(obj_, name, H5P_DEFAULT) <= 0)
      MIRROR_THROW(kFormat, path_ << ": dataset '" << name << "' is missing; not a complete Mirror checkpoint");
    h5::Handle ds(MIRROR_CHECK_HDF5(H5Dopen2(obj_, name, H5P_DEFAULT), path_ << " " << name), H5Dclose);
    h5::Handle space(MIRROR_CHECK_HDF5(H5Dget_space(ds.get()), path_ << " " << name), H5Sclose);
    if (H5Sget_simple_extent_ndims(space.get()) != 1) MIRROR_THROW(kFormat, path_ << ": " << name << " is not 1-D text");
    h5::check_storage(ds.get(), path_ + " " + name);
    hsize_t n = 0;
    MIRROR_CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), &n, nullptr), path_ << " " << name);
    if (n > (hsize_t{1} << 30)) MIRROR_THROW(kFormat, path_ << ": " << name << " claims " << n << " bytes");
    std::string v(static_cast<std::size_t>(n), '\0');
    if (n > 0)
      MIRROR_CHECK_HDF5(H5Dread(ds.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                        path_ << " " << name << " (file truncated or damaged?)");
    return v;
  }
  // A 1-D integer attribute of 1 to 8 elements (a shape).
  std::vector<std::int64_t> i64_array(const char* name) const {
    h5::Handle attr = open(name);
    h5::Handle file_type(MIRROR_CHECK_HDF5(H5Aget_type(attr.get()), path_ << " attribute " << name), H5Tclose);
    if (H5Tget_class(file_type.get()) != H5T_INTEGER)
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' is not an integer array");
    h5::Handle space(MIRROR_CHECK_HDF5(H5Aget_space(attr.get()), path_ << " attribute " << name), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (H5Sget_simple_extent_ndims(space.get()) != 1 || n < 1 || n > 8)
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' holds " << n << " elements; expected a 1-D shape "
                                  << "of 1 to 8 dimensions");
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    MIRROR_CHECK_HDF5(H5Aread(attr.get(), H5T_NATIVE_INT64, v.data()), path_ << " attribute " << name);
    return v;
  }
  std::string str(const char* name) const {
    h5::Handle attr = open(name);
    h5::Handle file_type(MIRROR_CHECK_HDF5(H5Aget_type(attr.get()), path_ << " attribute " << name), H5Tclose);
    if (H5Tget_class(file_type.get()) != H5T_STRING || H5Tis_variable_str(file_type.get()) > 0)
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' is not a fixed-length string");
    check_one_element(attr.get(), name);
    const std::size_t size = H5Tget_size(file_type.get());
    if (size == 0 || size > (std::size_t{1} << 20))
      MIRROR_THROW(kFormat, path_ << ": attribute '" << name << "' is a string of " << size << " bytes");
    std::string v(size, '\0');
    MIRROR_CHECK_HDF5(H5Aread(attr.get(), file_type.get(), v.data()), path_ << " attribute " << name);
    v.resize(std::strlen(v.c_str()));
    return v;
  }

 private:
  hid_t obj_;
  std::string path_;
};

// ---- tensors -----------------------------------------------------------------------------------

void write_tensors(hid_t file, const char* group_name, const std::vector<NamedTensor>& tensors) {
  h5::Handle group(MIRROR_CHECK_HDF5(H5Gcreate2(file, group_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), group_name),
                   H5Gclose);
  std::string order;
  for (const NamedTensor& t : tensors) {
    std::size_t numel = 1;
    for (auto d : t.shape) numel *= static_cast<std::size_t>(d);
    MIRROR_CHECK(numel == t.values.size(), kInternal,
                 "tensor " << t.name << " has " << t.values.size() << " values for a shape of " << numel);
    std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
    if (dims.empty()) dims.push_back(t.values.size());
    h5::Handle space(MIRROR_CHECK_HDF5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), t.name),
                     H5Sclose);
    h5::Handle ds(MIRROR_CHECK_HDF5(H5Dcreate2(group.get(), t.name.c_str(), H5T_IEEE_F32LE, space.get(),
                                               H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), t.name),
                  H5Dclose);
    if (!t.values.empty())
      MIRROR_CHECK_HDF5(H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.values.data()), t.name);
    write_u32(ds.get(), "crc32", crc32_of(t.values.data(), t.values.size() * sizeof(float)));
    order += t.name;
    order += '\n';
  }
  write_str(group.get(), "order", order);
}

std::vector<NamedTensor> read_tensors(hid_t file, const char* group_name, const std::string& path) {
  if (H5Lexists(file, group_name, H5P_DEFAULT) <= 0)
    MIRROR_THROW(kFormat, path << ": group /" << group_name << " is missing; not a complete Mirror checkpoint");
  h5::Handle group(MIRROR_CHECK_HDF5(H5Gopen2(file, group_name, H5P_DEFAULT), path << " /" << group_name), H5Gclose);
  std::vector<NamedTensor> out;
  std::istringstream names(Reader(group.get(), path).str("order"));
  for (std::string name; std::getline(names, name);) {
    if (name.empty()) continue;
    const std::string where = path + " /" + group_name + "/" + name;
    if (H5Lexists(group.get(), name.c_str(), H5P_DEFAULT) <= 0)
      MIRROR_THROW(kFormat, where << " is listed but missing");
    h5::Handle ds(MIRROR_CHECK_HDF5(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT), where), H5Dclose);
    h5::Handle type(MIRROR_CHECK_HDF5(H5Dget_type(ds.get()), where), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != 4)
      MIRROR_THROW(kFormat, where << " is not a float32 dataset");
    h5::Handle space(MIRROR_CHECK_HDF5(H5Dget_space(ds.get()), where), H5Sclose);
    const int rank = MIRROR_CHECK_HDF5(H5Sget_simple_extent_ndims(space.get()), where);
    if (rank < 1 || rank > 8) MIRROR_THROW(kFormat, where << " has rank " << rank << ", expected 1 to 8");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    MIRROR_CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), where);
    NamedTensor t;
    t.name = name;
    std::size_t numel = 1;
    for (hsize_t d : dims) {
      // Checked per dimension: the product of unchecked dimensions can wrap around to a small number.
      if (d != 0 && numel > (std::size_t{1} << 34) / d)
        MIRROR_THROW(kFormat, where << " claims more than 2^34 elements (dimension " << d << ")");
      t.shape.push_back(static_cast<std::int64_t>(d));
      numel *= d;
    }
    h5::check_storage(ds.get(), where);
    t.values.resize(numel);
    if (numel > 0)
      MIRROR_CHECK_HDF5(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.values.data()),
                        where << " (file truncated or damaged?)");
    const std::uint32_t stored = Reader(ds.get(), where).u32("crc32");
    const std::uint32_t actual = crc32_of(t.values.data(), numel * sizeof(float));
    if (stored != actual)
      MIRROR_THROW(kFormat, where << ": checksum mismatch (stored crc32 " << std::hex << stored << ", data has "
                                  << actual << "); the checkpoint is corrupt");
    out.push_back(std::move(t));
  }
  return out;
}

// ---- tokenizer files (v5) ----------------------------------------------------------------------

// /tokenizer: one uint8 dataset per file with its CRC-32, and the attribute "order" naming them one a line.
void write_tokenizer_files(hid_t file, const std::vector<NamedBlob>& blobs) {
  h5::Handle group(MIRROR_CHECK_HDF5(H5Gcreate2(file, "tokenizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "tokenizer"),
                   H5Gclose);
  std::string order;
  for (const NamedBlob& b : blobs) {
    const bool plain = !b.name.empty() && b.name[0] != '.' && b.name.find_first_of("/\n") == std::string::npos;
    MIRROR_CHECK(plain, kInvalidArgument,
                 "checkpoint state: tokenizer file name '" << b.name << "' is not a plain file name");
    write_text(group.get(), b.name.c_str(), b.bytes);
    h5::Handle ds(MIRROR_CHECK_HDF5(H5Dopen2(group.get(), b.name.c_str(), H5P_DEFAULT), b.name), H5Dclose);
    write_u32(ds.get(), "crc32", crc32_of(b.bytes.data(), b.bytes.size()));
    order += b.name;
    order += '\n';
  }
  write_str(group.get(), "order", order);
}

std::vector<NamedBlob> read_tokenizer_files(hid_t file, const std::string& path) {
  if (H5Lexists(file, "tokenizer", H5P_DEFAULT) <= 0)
    MIRROR_THROW(kFormat, path << ": group /tokenizer is missing; not a complete version-5 Mirror checkpoint");
  h5::Handle group(MIRROR_CHECK_HDF5(H5Gopen2(file, "tokenizer", H5P_DEFAULT), path << " /tokenizer"), H5Gclose);
  std::vector<NamedBlob> out;
  std::istringstream names(Reader(group.get(), path).str("order"));
  for (std::string name; std::getline(names, name);) {
    if (name.empty()) continue;
    const std::string where = path + " /tokenizer/" + name;
    NamedBlob b{name, Reader(group.get(), path + " /tokenizer").text(name.c_str())};
    h5::Handle ds(MIRROR_CHECK_HDF5(H5Dopen2(group.get(), name.c_str(), H5P_DEFAULT), where), H5Dclose);
    const std::uint32_t stored = Reader(ds.get(), where).u32("crc32");
    if (stored != crc32_of(b.bytes.data(), b.bytes.size()))
      MIRROR_THROW(kFormat, where << ": checksum mismatch (stored crc32 " << std::hex << stored
                                  << "); the checkpoint is corrupt");
    out.push_back(std::move(b));
  }
  return out;
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) MIRROR_THROW(kIo, "cannot open " << path << " to flush it: " << std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) MIRROR_THROW(kIo, "fsync of " << path << " failed: " << std::strerror(err));
}

void write_hdf5(const std::string& tmp, const CheckpointState& s) {
  h5::Handle file(MIRROR_CHECK_HDF5(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                                    "cannot create " << tmp),
                  H5Fclose);
  const hid_t f = file.get();
  MIRROR_CHECK(s.format_version == kCheckpointFormatVersion, kInternal,
               "write_checkpoint writes format version " << kCheckpointFormatVersion << ", got a state of version "
                                                         << s.format_version);
  MIRROR_CHECK(holds(s.sample_shape, s.input_features), kInvalidArgument,
               "checkpoint state: sample_shape [" << shape_text(s.sample_shape) << "] does not hold input_features "
                                                  << s.input_features << " values");
  write_str(f, "format", kFormatName);
  write_i64(f, "format_version", kCheckpointFormatVersion);
  write_i64(f, "step", s.step);
  write_i64(f, "epoch", s.epoch);
  write_i64(f, "epoch_micro_step", s.epoch_micro_step);
  write_i64(f, "world_size", s.world_size);
  write_u64(f, "seed", s.seed);
  write_str(f, "model_spec", s.model_spec);
  write_i64_array(f, "sample_shape", s.sample_shape);
  write_text(f, "model_description", s.model_description);
  write_i64(f, "input_features", s.input_features);
  write_i64(f, "num_classes", s.num_classes);
  write_f64(f, "epoch_loss_sum", s.epoch_loss_sum);
  write_i64(f, "epoch_correct", s.epoch_correct);
  write_i64(f, "epoch_samples", s.epoch_samples);
  write_str(f, "optimizer_kind", s.optimizer_kind);
  write_i64(f, "optimizer_step", s.optimizer_step);
  write_text(f, "config_json", s.config_json);
  write_text(f, "metrics_jsonl", s.metrics_jsonl);
  write_f64(f, "loss_scale", s.loss_scale);
  write_i64(f, "loss_scale_good_steps", s.loss_scale_good_steps);
  write_str(f, "tokenizer", s.tokenizer);
  const std::string header = header_text(s);
  write_u32(f, "header_crc32", crc32_of(header.data(), header.size()));
  write_tensors(f, "params", s.params);
  write_tensors(f, "buffers", s.buffers);
  write_tensors(f, "optimizer", s.optimizer_state);
  write_tokenizer_files(f, s.tokenizer_files);
  MIRROR_CHECK_HDF5(H5Fflush(f, H5F_SCOPE_GLOBAL), tmp);
}

}  // namespace

void write_checkpoint_file(const std::string& path, const CheckpointState& state) {
  h5::silence_hdf5_errors();
  namespace fs = std::filesystem;
  const fs::path final_path(path);
  const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  std::string tmp_name = ".";
  tmp_name += final_path.filename().string();
  tmp_name += ".tmp.";
  tmp_name += std::to_string(::getpid());
  const std::string tmp = (dir / tmp_name).string();
  try {
    write_hdf5(tmp, state);  // the file is closed when this returns
    fsync_path(tmp, false);
    std::error_code ec;
    fs::rename(tmp, final_path, ec);
    if (ec) MIRROR_THROW(kIo, "cannot rename " << tmp << " to " << path << ": " << ec.message());
    fsync_path(dir.string(), true);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

CheckpointState read_checkpoint(const std::string& path, CheckpointParts parts) {
  h5::silence_hdf5_errors();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    MIRROR_THROW(kIo, "checkpoint " << path << " does not exist or is not a regular file");
  if (H5Fis_hdf5(path.c_str()) <= 0)
    MIRROR_THROW(kFormat, path << " is not an HDF5 file (or its header is damaged); expected a Mirror checkpoint");
  const hid_t raw = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (raw < 0) MIRROR_THROW(kFormat, path << " cannot be opened as HDF5: the file is truncated or damaged");
  h5::Handle file(raw, H5Fclose);
  Reader r(file.get(), path);
  if (H5Aexists(file.get(), "format") <= 0 || r.str("format") != kFormatName)
    MIRROR_THROW(kFormat, path << " is an HDF5 file but not a Mirror checkpoint (no format=\"" << kFormatName << "\")");
  const std::int64_t version = r.i64("format_version");
  if (version < kOldestReadableVersion || version > kCheckpointFormatVersion)
    MIRROR_THROW(kFormat, path << " has checkpoint format version " << version << "; this Mirror reads versions "
                               << kOldestReadableVersion << " to " << kCheckpointFormatVersion);
  CheckpointState s;
  s.format_version = version;
  s.step = r.i64("step");
  s.epoch = r.i64("epoch");
  s.epoch_micro_step = r.i64("epoch_micro_step");
  s.world_size = static_cast<int>(r.i64("world_size"));
  s.seed = r.u64("seed");
  s.model_spec = r.str("model_spec");
  s.input_features = r.i64("input_features");
  s.num_classes = r.i64("num_classes");
  s.epoch_loss_sum = r.f64("epoch_loss_sum");
  s.epoch_correct = r.i64("epoch_correct");
  s.epoch_samples = r.i64("epoch_samples");
  s.optimizer_kind = r.str("optimizer_kind");
  s.optimizer_step = r.i64("optimizer_step");
  s.config_json = r.text("config_json");
  s.metrics_jsonl = r.text("metrics_jsonl");
  if (version >= 2) {
    s.sample_shape = r.i64_array("sample_shape");
    s.model_description = r.text("model_description");
  } else {  // version 1 knew only the spec and a flat feature count
    s.sample_shape = {s.input_features};
    s.model_description = s.model_spec;
  }
  if (version >= 3) {
    s.loss_scale = r.f64("loss_scale");
    s.loss_scale_good_steps = r.i64("loss_scale_good_steps");
  }
  if (version >= 4) s.tokenizer = r.str("tokenizer");
  if (!holds(s.sample_shape, s.input_features))
    MIRROR_THROW(kFormat, path << ": sample_shape [" << shape_text(s.sample_shape) << "] does not hold input_features "
                               << s.input_features << " values; the checkpoint is corrupt");
  const std::string header = header_text(s);
  if (r.u32("header_crc32") != crc32_of(header.data(), header.size()))
    MIRROR_THROW(kFormat, path << ": header checksum mismatch; the checkpoint is corrupt");
  s.params = read_tensors(file.get(), "params", path);
  if (version >= 2) s.buffers = read_tensors(file.get(), "buffers", path);
  if (parts == CheckpointParts::kAll) s.optimizer_state = read_tensors(file.get(), "optimizer", path);
  if (version >= 5) s.tokenizer_files = read_tokenizer_files(file.get(), path);
  return s;
}

}  // namespace mirror::train
