// h5_source.cc — H5Source: the element type of an HDF5 dataset mapped to ElemType, rows read by hyperslab.
#include "h5_source.h"

#include <filesystem>

#include "h5.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

// The file's datasets, for the message when a named one is missing.
herr_t collect_dataset(hid_t obj, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET) {
    auto& list = *static_cast<std::string*>(out);
    if (list.size() < 400) list += std::string(list.empty() ? "" : ", ") + "/" + name;
  }
  return 0;
}

std::string list_datasets(hid_t file) {
  std::string list;
  h5::QuietErrors quiet;
  H5Ovisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, collect_dataset, &list);
  return list.empty() ? "none" : list;
}

ElemType elem_type_of(hid_t type, const std::string& what) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    if (size == 2 || size == 4) return ElemType::kFloat32;  // float16 widened by HDF5's conversion: exact
    if (size == 8) return ElemType::kFloat64;
  }
  if (cls == H5T_INTEGER) {
    const bool sign = H5Tget_sign(type) == H5T_SGN_2;
    switch (size) {
      case 1: return sign ? ElemType::kInt8 : ElemType::kUInt8;
      case 2: return sign ? ElemType::kInt16 : ElemType::kUInt16;
      case 4: return sign ? ElemType::kInt32 : ElemType::kUInt32;
      case 8: return sign ? ElemType::kInt64 : ElemType::kUInt64;
      default: break;
    }
  }
  MIRROR_THROW(kFormat, what << " has HDF5 type class " << cls << " of " << size
                             << " bytes; expected integers or floating-point numbers "
                                "(a bool array: store it as uint8)");
}

hid_t native_of(ElemType t) {
  switch (t) {
    case ElemType::kBool: case ElemType::kUInt8: return H5T_NATIVE_UINT8;
    case ElemType::kInt8: return H5T_NATIVE_INT8;
    case ElemType::kInt16: return H5T_NATIVE_INT16;
    case ElemType::kUInt16: return H5T_NATIVE_UINT16;
    case ElemType::kInt32: return H5T_NATIVE_INT32;
    case ElemType::kUInt32: return H5T_NATIVE_UINT32;
    case ElemType::kInt64: return H5T_NATIVE_INT64;
    case ElemType::kUInt64: return H5T_NATIVE_UINT64;
    case ElemType::kFloat16: case ElemType::kFloat32: return H5T_NATIVE_FLOAT;
    case ElemType::kFloat64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_UINT8;
}

class H5Source : public ArraySource {
 public:
  H5Source(const std::string& file, const std::string& dataset) : name_("'" + file + "' dataset '" + dataset + "'") {
    std::error_code ec;
    MIRROR_CHECK(std::filesystem::is_regular_file(file, ec), kIo, "input file '" << file << "' does not exist or is not a file");
    {
      h5::QuietErrors quiet;
      MIRROR_CHECK(H5Fis_hdf5(file.c_str()) > 0, kFormat, "'" << file << "' is not an HDF5 file (truncated or corrupt?)");
    }
    file_ = h5::open_file_readonly(file);
    MIRROR_CHECK(h5::link_exists(file_.get(), dataset), kFormat,
                 "HDF5 file '" << file << "' has no dataset '" << dataset << "'; it has: " << list_datasets(file_.get()));
    dset_ = h5::open_dataset(file_.get(), dataset, file);
    h5::check_storage(dset_.get(), file, dataset);
    h5::Id t = h5::dataset_type(dset_.get());
    type_ = elem_type_of(t.get(), name_);
    shape_ = h5::dims_of(dset_.get());
    MIRROR_CHECK(!shape_.empty(), kFormat, name_ << " is a scalar; expected one row per sample");
  }
  const std::vector<int64_t>& shape() const override { return shape_; }
  ElemType type() const override { return type_; }
  const std::string& name() const override { return name_; }
  void read(int64_t rows, void* out) override {
    h5::QuietErrors quiet;
    h5::Id fs = h5::dataset_space(dset_.get());
    std::vector<hsize_t> start(shape_.size(), 0), count(shape_.begin(), shape_.end());
    start[0] = static_cast<hsize_t>(next_);
    count[0] = static_cast<hsize_t>(rows);
    MIRROR_CHECK(next_ + rows <= shape_[0], kInternal, "read past the end of " << name_);
    MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                      "selecting rows of " << name_);
    h5::Id ms(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    MIRROR_CHECK_HDF5(H5Dread(dset_.get(), native_of(type_), ms.get(), fs.get(), H5P_DEFAULT, out),
                      "reading rows " << next_ << ".." << next_ + rows << " of " << name_);
    next_ += rows;
  }

 private:
  std::string name_;
  h5::Id file_, dset_;
  ElemType type_;
  std::vector<int64_t> shape_;
  int64_t next_ = 0;
};

}  // namespace

std::unique_ptr<ArraySource> open_h5_array(const std::string& file, const std::string& dataset) {
  return std::make_unique<H5Source>(file, dataset);
}

}  // namespace mirror::data
