// h5.h — small RAII wrappers over the HDF5 C API used by the data library (private): owned ids that
// close themselves, a check macro that turns a negative HDF5 status into mirror::Error(kHdf5), a guard
// that silences HDF5's own error printing, and helpers to read and write scalar/array attributes.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mirror/error.h"

// MIRROR_CHECK_HDF5(H5Dread(...), "reading '/train/x' of 'f.h5'") — throws kHdf5 when the call returns < 0.
#define MIRROR_CHECK_HDF5(expr, where)                                                   \
  do {                                                                                   \
    if ((expr) < 0) MIRROR_THROW(kHdf5, "HDF5 call failed: " #expr " while " << where); \
  } while (0)

namespace mirror::data::h5 {

// An owned HDF5 identifier; the close function depends on what it identifies.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Turns HDF5's automatic error-stack printing off for the lifetime of the guard (per thread).
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

Id open_file_readonly(const std::string& path);  // checks existence and HDF5 signature first (kIo/kFormat)
Id create_file(const std::string& path);         // truncates
bool link_exists(hid_t loc, const std::string& path);
Id open_group(hid_t loc, const std::string& path, const std::string& file);
Id open_dataset(hid_t loc, const std::string& path, const std::string& file,
                std::size_t chunk_cache_bytes = 0);
Id dataset_space(hid_t dset);
Id dataset_type(hid_t dset);
std::vector<int64_t> dims_of(hid_t dset);
// Checks a dataset's storage layout against its dataspace before any of its data is read: chunk dimensions
// within the dataset's (fixed) dimensions and at most HDF5's 4 GiB per chunk, compact/contiguous storage of
// exactly the dataspace's size. HDF5 1.10 trusts these fields of the file and reads out of bounds on a file
// whose layout disagrees with its dataspace (docs/robustness.md). Throws kFormat naming `name` in `file`.
void check_storage(hid_t dset, const std::string& file, const std::string& name);

// Attributes on an object (group or file root). The readers return nullopt when the attribute is absent
// and throw kFormat when it exists with a different type class or element count.
std::optional<std::vector<int64_t>> read_int_attr(hid_t obj, const std::string& name, const std::string& where);
std::optional<double> read_double_attr(hid_t obj, const std::string& name, const std::string& where);
// Strings (fixed-length or variable-length, as h5py writes either); nullopt when absent, kFormat otherwise.
std::optional<std::vector<std::string>> read_string_attr(hid_t obj, const std::string& name, const std::string& where);
void write_int_attr(hid_t obj, const std::string& name, const std::vector<int64_t>& values);
// A 1-d attribute of variable-length UTF-8 strings (h5py reads it as a list of str).
void write_string_attr(hid_t obj, const std::string& name, const std::vector<std::string>& values);
void write_double_attr(hid_t obj, const std::string& name, double value);

}  // namespace mirror::data::h5
