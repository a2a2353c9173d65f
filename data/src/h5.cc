// h5.cc — RAII wrappers and attribute helpers over the HDF5 C API (see h5.h).
#include "h5.h"

#include <algorithm>
#include <cstring>
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
  MIRROR_CHECK(f >= 0, kIo, "cannot open HDF5 file '" << path << "' for reading (truncated or corrupt?)");
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

void check_storage(hid_t dset, const std::string& file, const std::string& name) {
  QuietErrors quiet;
  Id space = dataset_space(dset);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  MIRROR_CHECK_HDF5(rank, "reading the rank of '" << name << "' in '" << file << "'");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), maxdims(static_cast<std::size_t>(rank));
  MIRROR_CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), dims.data(), maxdims.data()), "reading dims");
  Id type = dataset_type(dset);
  const std::size_t elem = H5Tget_size(type.get());
  MIRROR_CHECK(elem > 0, kFormat, "file '" << file << "' dataset '" << name << "' has an element size of 0");
  Id plist(H5Dget_create_plist(dset), H5Pclose);
  MIRROR_CHECK_HDF5(plist.get(), "reading the creation properties of '" << name << "' in '" << file << "'");
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  const std::string what = "file '" + file + "' dataset '" + name + "'";
  if (layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(static_cast<std::size_t>(rank) + 1, 0);
    const int crank = H5Pget_chunk(plist.get(), rank + 1, chunk.data());
    MIRROR_CHECK(crank == rank, kFormat, what << " has chunks of rank " << crank << "; expected rank " << rank
                                             << " like its dataspace (damaged layout?)");
    double chunk_bytes = static_cast<double>(elem);
    for (int i = 0; i < rank; ++i) {
      const hsize_t limit = maxdims[i] == H5S_UNLIMITED ? H5S_UNLIMITED : std::max<hsize_t>(maxdims[i], 1);
      MIRROR_CHECK(chunk[i] >= 1 && chunk[i] <= limit, kFormat,
                   what << ": chunk dimension " << i << " is " << chunk[i] << " for a dataset dimension of " << dims[i]
                        << "; expected 1 .. " << std::max<hsize_t>(maxdims[i], 1) << " (damaged layout?)");
      chunk_bytes *= static_cast<double>(chunk[i]);
    }
    MIRROR_CHECK(chunk_bytes < 4294967296.0, kFormat,
                 what << ": chunks of " << chunk_bytes << " bytes; expected less than 4 GiB (damaged layout?)");
    // Unfiltered chunks are stored at full size; HDF5 1.10 copies a whole chunk out of a buffer of the size
    // its chunk index records, so a smaller recorded size reads past that buffer. Check every chunk.
    if (H5Pget_nfilters(plist.get()) == 0) {
      std::vector<hsize_t> grid(static_cast<std::size_t>(rank)), offset(static_cast<std::size_t>(rank), 0);
      double chunks = 1;
      for (int i = 0; i < rank; ++i) {
        grid[i] = (dims[i] + chunk[i] - 1) / chunk[i];
        chunks *= static_cast<double>(grid[i]);
      }
      // Bounded so that opening stays fast (about a second per million chunks); Mirror's writer makes
      // chunks of ~256 KiB, so only a dataset of more than 256 GiB per file goes unchecked.
      for (bool more = chunks > 0 && chunks <= (1 << 20); more;) {
        hsize_t nbytes = 0;
        MIRROR_CHECK(H5Dget_chunk_storage_size(dset, offset.data(), &nbytes) >= 0 &&
                         (nbytes == 0 || static_cast<double>(nbytes) == chunk_bytes),
                     kFormat, what << ": the chunk at row " << offset[0] << " is stored in " << nbytes
                                   << " bytes; expected " << chunk_bytes << " (damaged chunk index?)");
        more = false;
        for (int i = rank - 1; i >= 0 && !more; --i) {  // the next chunk, last dimension fastest
          offset[i] += chunk[i];
          if (offset[i] < dims[i]) more = true;
          else offset[i] = 0;
        }
      }
    }
  } else if (layout == H5D_COMPACT || layout == H5D_CONTIGUOUS) {
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    MIRROR_CHECK_HDF5(n, "counting the elements of '" << name << "' in '" << file << "'");
    const hsize_t stored = H5Dget_storage_size(dset);
    const double expected = static_cast<double>(n) * static_cast<double>(elem);
    // Contiguous storage may be unallocated (0 bytes: every element is the fill value).
    MIRROR_CHECK(static_cast<double>(stored) == expected || (layout == H5D_CONTIGUOUS && stored == 0), kFormat,
                 what << " stores " << stored << " bytes for " << n << " elements of " << elem
                      << " bytes; expected " << expected << " (damaged layout?)");
  } else {
    MIRROR_THROW(kFormat, what << " has storage layout " << static_cast<int>(layout)
                               << "; expected chunked, contiguous or compact storage");
  }
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

std::optional<std::vector<std::string>> read_string_attr(hid_t obj, const std::string& name, const std::string& where) {
  auto a = open_attr(obj, name);
  if (!a) return std::nullopt;
  MIRROR_CHECK(a->cls == H5T_STRING && a->count >= 1, kFormat,
               where << ": attribute '" << name << "' has the wrong type; expected strings");
  Id ftype(H5Aget_type(a->attr.get()), H5Tclose);
  const auto n = static_cast<std::size_t>(a->count);
  std::vector<std::string> out;
  if (H5Tis_variable_str(ftype.get()) > 0) {
    Id mtype(H5Tcopy(H5T_C_S1), H5Tclose);
    MIRROR_CHECK_HDF5(H5Tset_size(mtype.get(), H5T_VARIABLE), "making a string type");
    MIRROR_CHECK_HDF5(H5Tset_cset(mtype.get(), H5Tget_cset(ftype.get())), "making a string type");
    std::vector<char*> ptrs(n, nullptr);
    MIRROR_CHECK_HDF5(H5Aread(a->attr.get(), mtype.get(), ptrs.data()), "reading attribute '" << name << "' of " << where);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    Id space(H5Aget_space(a->attr.get()), H5Sclose);
    H5Dvlen_reclaim(mtype.get(), space.get(), H5P_DEFAULT, ptrs.data());
  } else {
    const std::size_t len = H5Tget_size(ftype.get());
    MIRROR_CHECK(len >= 1 && len <= 4096, kFormat, where << ": attribute '" << name << "' has strings of " << len
                                                         << " bytes; expected 1..4096");
    std::vector<char> buf(n * len);
    MIRROR_CHECK_HDF5(H5Aread(a->attr.get(), ftype.get(), buf.data()), "reading attribute '" << name << "' of " << where);
    for (std::size_t i = 0; i < n; ++i) {
      const char* p = buf.data() + i * len;
      out.emplace_back(p, strnlen(p, len));
    }
  }
  return out;
}

void write_int_attr(hid_t obj, const std::string& name, const std::vector<int64_t>& values) {
  const hsize_t n = values.size();
  Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Id a(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  MIRROR_CHECK_HDF5(a.get(), "creating attribute '" << name << "'");
  MIRROR_CHECK_HDF5(H5Awrite(a.get(), H5T_NATIVE_INT64, values.data()), "writing attribute '" << name << "'");
}

void write_string_attr(hid_t obj, const std::string& name, const std::vector<std::string>& values) {
  const hsize_t n = values.size();
  Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  MIRROR_CHECK_HDF5(H5Tset_size(type.get(), H5T_VARIABLE), "making a string type");
  MIRROR_CHECK_HDF5(H5Tset_cset(type.get(), H5T_CSET_UTF8), "making a string type");
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  Id a(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  MIRROR_CHECK_HDF5(a.get(), "creating attribute '" << name << "'");
  MIRROR_CHECK_HDF5(H5Awrite(a.get(), type.get(), ptrs.data()), "writing attribute '" << name << "'");
}

void write_double_attr(hid_t obj, const std::string& name, double value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  MIRROR_CHECK_HDF5(a.get(), "creating attribute '" << name << "'");
  MIRROR_CHECK_HDF5(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "writing attribute '" << name << "'");
}

}  // namespace mirror::data::h5
