// h5_source.h — an ArraySource over any dataset of any HDF5 file (private), e.g. one written by h5py:
// integer or floating-point elements of any size and byte order (HDF5 converts them to native ones; a
// float16 dataset is read as float32, which is exact), read a block of rows at a time by hyperslab.
#pragma once

#include <memory>
#include <string>

#include "array_source.h"

namespace mirror::data {

// Opens dataset `dataset` (e.g. "/images") of `file`. Throws kIo for a missing file, kFormat for a missing
// dataset (listing the datasets the file has) or one that is not numeric.
std::unique_ptr<ArraySource> open_h5_array(const std::string& file, const std::string& dataset);

}  // namespace mirror::data
