// h5_file.h — minimal RAII ownership of HDF5 identifiers and the MIRROR_CHECK_HDF5 macro, for the checkpoint
// reader and writer. Private to trainer/.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "mirror/error.h"

// HDF5 calls return a negative value on failure.
#define MIRROR_CHECK_HDF5(call, context)                                        \
  ([&]() {                                                                      \
    auto mirror_h5_rc_ = (call);                                                \
    if (mirror_h5_rc_ < 0) MIRROR_THROW(kHdf5, #call << " failed: " << context); \
    return mirror_h5_rc_;                                                       \
  }())

namespace mirror::train::h5 {

// Owns one hid_t and closes it with the matching H5*close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Checks a dataset's storage layout against its dataspace before any of its data is read (checkpoints are
// written contiguous; chunked or compact ones are accepted when consistent): chunk dimensions within the
// dataset's fixed dimensions and under HDF5's 4 GiB per chunk, compact/contiguous storage of exactly the
// dataspace's size. HDF5 1.10 trusts these fields and reads out of bounds when they disagree
// (docs/robustness.md). Throws kFormat naming `where`.
inline void check_storage(hid_t dset, const std::string& where) {
  Handle space(MIRROR_CHECK_HDF5(H5Dget_space(dset), where), H5Sclose);
  const int rank = MIRROR_CHECK_HDF5(H5Sget_simple_extent_ndims(space.get()), where);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), maxdims(static_cast<std::size_t>(rank));
  MIRROR_CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), dims.data(), maxdims.data()), where);
  Handle type(MIRROR_CHECK_HDF5(H5Dget_type(dset), where), H5Tclose);
  const std::size_t elem = H5Tget_size(type.get());
  if (elem == 0) MIRROR_THROW(kFormat, where << " has an element size of 0");
  Handle plist(MIRROR_CHECK_HDF5(H5Dget_create_plist(dset), where), H5Pclose);
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  if (layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(static_cast<std::size_t>(rank) + 1, 0);
    const int crank = H5Pget_chunk(plist.get(), rank + 1, chunk.data());
    if (crank != rank)
      MIRROR_THROW(kFormat, where << " has chunks of rank " << crank << " for a rank-" << rank << " dataset (damaged?)");
    double bytes = static_cast<double>(elem);
    for (int i = 0; i < rank; ++i) {
      const bool fixed = maxdims[i] != H5S_UNLIMITED;
      if (chunk[i] < 1 || (fixed && chunk[i] > std::max<hsize_t>(maxdims[i], 1)))
        MIRROR_THROW(kFormat, where << ": chunk dimension " << i << " is " << chunk[i] << " for a dimension of "
                                    << dims[i] << " (damaged layout?)");
      bytes *= static_cast<double>(chunk[i]);
    }
    if (bytes >= 4294967296.0) MIRROR_THROW(kFormat, where << ": chunks of " << bytes << " bytes (damaged layout?)");
  } else if (layout == H5D_COMPACT || layout == H5D_CONTIGUOUS) {
    const hssize_t n = MIRROR_CHECK_HDF5(H5Sget_simple_extent_npoints(space.get()), where);
    const double stored = static_cast<double>(H5Dget_storage_size(dset));
    const double expected = static_cast<double>(n) * static_cast<double>(elem);
    if (stored != expected && !(layout == H5D_CONTIGUOUS && stored == 0))
      MIRROR_THROW(kFormat, where << " stores " << stored << " bytes for " << n << " elements of " << elem
                                  << " bytes; expected " << expected << " (damaged layout?)");
  } else {
    MIRROR_THROW(kFormat, where << " has storage layout " << static_cast<int>(layout)
                                << "; expected contiguous, chunked or compact");
  }
}

// Turns off HDF5's automatic printing of its error stack (Mirror reports errors itself). Idempotent.
inline void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

}  // namespace mirror::train::h5
