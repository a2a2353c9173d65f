// array_source.h — ArraySource (private): one numeric N-d array of an import's input (a .npy file, an .npz
// member, an HDF5 dataset, an image folder), read in order, a block of rows at a time, so that no input is
// ever held in memory whole. Row i is sample i: shape() is {N, per-sample dims...}.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "elem_type.h"

namespace mirror::data {

class ArraySource {
 public:
  virtual ~ArraySource() = default;
  virtual const std::vector<int64_t>& shape() const = 0;  // {N, d1, ...}; at least one dimension
  virtual ElemType type() const = 0;
  // Names the array in messages, e.g. "'mnist.npz' member 'x_train.npy'" or "'f.h5' dataset '/images'".
  virtual const std::string& name() const = 0;
  // Reads the next `rows` rows as native-endian values of type() into `out` (rows * row_elems() values).
  // Throws kFormat/kIo when the input ends early or cannot be read.
  virtual void read(int64_t rows, void* out) = 0;

  int64_t rows() const { return shape()[0]; }
  int64_t row_elems() const {
    int64_t n = 1;
    for (std::size_t i = 1; i < shape().size(); ++i) n *= shape()[i];
    return n;
  }
};

// Opens an array from its start; called once per pass over it (labels are read twice: once to find the
// classes, once with the samples).
using ArrayOpener = std::function<std::unique_ptr<ArraySource>()>;

}  // namespace mirror::data
