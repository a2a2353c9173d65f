// h5.cc — RAII wrappers and attribute helpers over the HDF5 C API (see h5.h).
#include "h5.h"

#include <filesystem>

namespace mirror::data::h5 {

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

Id open_file_readonly(const std::string& path) {
  std::error_code ec;
  MIRROR_CHECK(std::filesystem::exists(path, ec), kIo,
               "dataset file '" << path << "' does not exist; expected an HDF5 file written by mirror-data "
                                << "(see docs/dataset-format.md)");
  QuietErrors quiet;
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  MIRROR_CHECK(is_h5 > 0, kFormat, "file '" << path << "' is not an HDF5 file; expected a dataset written by mirror-data");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  MIRROR_CHECK(f >= 0, kIo, "cannot open HDF5 file '" << path << "' for reading");
  return Id(f, H5Fclose);
}

Id create_file(const std::string& path) {
  QuietErrors quiet;
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  MIRROR_CHECK(f >= 0, kIo, "cannot create HDF5 file '" << path << "' (does its directory exist and is it writable?)");
  return Id(f, H5Fclose);
}

bool link_exists(hid_t loc, const std::string& path) {
  QuietErrors quiet;
  // Check each component so that a missing parent group is "absent", not an error.
  std::size_t pos = 0;
  while (true) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (!prefix.empty() && prefix != "/" && H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

Id open_group(hid_t loc, const std::string& path, const std::string& file) {
  QuietErrors quiet;
  hid_t g = H5Gopen2(loc, path.c_str(), H5P_DEFAULT);
  MIRROR_CHECK(g >= 0, kFormat, "file '" << file << "': '" << path << "' is not a group; expected a group");
  return Id(g, H5Gclose);
}

Id open_dataset(hid_t loc, const std::string& path, const std::string& file, std::size_t chunk_cache_bytes) {
  QuietErrors quiet;
  Id dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  if (chunk_cache_bytes > 0) {
    MIRROR_CHECK_HDF5(H5Pset_chunk_cache(dapl.get(), 12421, chunk_cache_bytes, 1.0), "setting the chunk cache");
  }
  hid_t d = H5Dopen2(loc, path.c_str(), dapl.get());
  MIRROR_CHECK(d >= 0, kFormat, "file '" << file << "': '" << path << "' is not a dataset; expected a dataset");
  return Id(d, H5Dclose);
}

Id dataset_space(hid_t dset) {
  hid_t s = H5Dget_space(dset);
  MIRROR_CHECK_HDF5(s, "getting a dataspace");
  return Id(s, H5Sclose);
}

Id dataset_type(hid_t dset) {
  hid_t t = H5Dget_type(dset);
  MIRROR_CHECK_HDF5(t, "getting a datatype");
  return Id(t, H5Tclose);
}

std::vector<int64_t> dims_of(hid_t dset) {
  Id space = dataset_space(dset);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  MIRROR_CHECK_HDF5(rank, "reading a dataset's rank");
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  MIRROR_CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), d.data(), nullptr), "reading a dataset's dims");
  return std::vector<int64_t>(d.begin(), d.end());
}

namespace {

// Opens attribute `name` and returns it with its element count and type class; nullopt when absent.
struct OpenAttr {
  Id attr;
  H5T_class_t cls;
  hssize_t count;
};

std::optional<OpenAttr> open_attr(hid_t obj, const std::string& name) {
  QuietErrors quiet;
  if (H5Aexists(obj, name.c_str()) <= 0) return std::nullopt;
  Id a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  MIRROR_CHECK_HDF5(a.get(), "opening attribute '" << name << "'");
  Id t(H5Aget_type(a.get()), H5Tclose);
  Id s(H5Aget_space(a.get()), H5Sclose);
  MIRROR_CHECK_HDF5(t.get(), "reading the type of attribute '" << name << "'");
  MIRROR_CHECK_HDF5(s.get(), "reading the space of attribute '" << name << "'");
  return OpenAttr{std::move(a), H5Tget_class(t.get()), H5Sget_simple_extent_npoints(s.get())};
}

}  // namespace

std::optional<std::vector<int64_t>> read_int_attr(hid_t obj, const std::string& name, const std::string& where) {
  auto a = open_attr(obj, name);
  if (!a) return std::nullopt;
  MIRROR_CHECK(a->cls == H5T_INTEGER && a->count >= 1, kFormat,
               where << ": attribute '" << name << "' has the wrong type; expected integer(s)");
  std::vector<int64_t> v(static_cast<std::size_t>(a->count));
  MIRROR_CHECK_HDF5(H5Aread(a->attr.get(), H5T_NATIVE_INT64, v.data()), "reading attribute '" << name << "' of " << where);
  return v;
}

std::optional<double> read_double_attr(hid_t obj, const std::string& name, const std::string& where) {
  auto a = open_attr(obj, name);
  if (!a) return std::nullopt;
  MIRROR_CHECK((a->cls == H5T_FLOAT || a->cls == H5T_INTEGER) && a->count == 1, kFormat,
               where << ": attribute '" << name << "' has the wrong type; expected one floating-point number");
  double v = 0;
  MIRROR_CHECK_HDF5(H5Aread(a->attr.get(), H5T_NATIVE_DOUBLE, &v), "reading attribute '" << name << "' of " << where);
  return v;
}

void write_int_attr(hid_t obj, const std::string& name, const std::vector<int64_t>& values) {
  const hsize_t n = values.size();
  Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Id a(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  MIRROR_CHECK_HDF5(a.get(), "creating attribute '" << name << "'");
  MIRROR_CHECK_HDF5(H5Awrite(a.get(), H5T_NATIVE_INT64, values.data()), "writing attribute '" << name << "'");
}

void write_double_attr(hid_t obj, const std::string& name, double value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  MIRROR_CHECK_HDF5(a.get(), "creating attribute '" << name << "'");
  MIRROR_CHECK_HDF5(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "writing attribute '" << name << "'");
}

}  // namespace mirror::data::h5
