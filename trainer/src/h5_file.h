// h5_file.h — minimal RAII ownership of HDF5 identifiers and the MIRROR_CHECK_HDF5 macro, for the checkpoint
// reader and writer. Private to trainer/.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

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

// Turns off HDF5's automatic printing of its error stack (Mirror reports errors itself). Idempotent.
inline void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

}  // namespace mirror::train::h5
