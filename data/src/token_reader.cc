// token_reader.cc — TokenReader: hyperslab reads of a split's tokens, checked and widened to int32.
#include "token_reader.h"

#include "mirror/error.h"

namespace mirror::data {

TokenReader::TokenReader(const Dataset& dataset, const std::string& split, std::size_t chunk_cache_bytes) {
  const DatasetInfo& info = dataset.info();
  MIRROR_CHECK(info.text, kInvalidArgument,
               "dataset " << dataset.describe() << " is not a token dataset; expected kind 'tokens'");
  const SplitInfo& s = dataset.split(split);
  path_ = info.files.at(0);
  name_ = "/" + s.name + "/tokens";
  vocab_ = info.vocab_size;
  size_ = s.size;
  file_ = h5::open_file_readonly(path_);
  tokens_ = h5::open_dataset(file_.get(), name_, path_, chunk_cache_bytes);
  const auto dims = h5::dims_of(tokens_.get());
  MIRROR_CHECK(dims.size() == 1 && dims[0] == size_, kFormat,
               "file '" << path_ << "' dataset '" << name_ << "' changed size since it was opened");
}

void TokenReader::read(int64_t first, int64_t count, int32_t* out) {
  MIRROR_CHECK(first >= 0 && count >= 0 && first + count <= size_, kInvalidArgument,
               "tokens " << first << ".." << first + count << " are outside '" << name_ << "' of " << size_ << " tokens");
  if (count == 0) return;
  h5::QuietErrors quiet;  // a failed read becomes a mirror::Error naming the file, not an HDF5 stack dump
  h5::Id fs = h5::dataset_space(tokens_.get());
  const hsize_t start = static_cast<hsize_t>(first), n = static_cast<hsize_t>(count);
  MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr),
                    "selecting tokens of '" << name_ << "'");
  h5::Id ms(H5Screate_simple(1, &n, nullptr), H5Sclose);
  scratch_.resize(static_cast<std::size_t>(count));
  MIRROR_CHECK_HDF5(H5Dread(tokens_.get(), H5T_NATIVE_UINT32, ms.get(), fs.get(), H5P_DEFAULT, scratch_.data()),
                    "reading tokens " << first << ".." << first + count << " of '" << name_ << "' in '" << path_ << "'");
  ++reads_;
  for (std::size_t i = 0; i < scratch_.size(); ++i) {
    const uint32_t t = scratch_[i];
    MIRROR_CHECK(t < static_cast<uint64_t>(vocab_), kFormat,
                 "file '" << path_ << "' dataset '" << name_ << "': token " << t << " at position " << first + i
                          << " is out of range; expected 0 <= token < " << vocab_ << " (vocab_size)");
    out[i] = static_cast<int32_t>(t);
  }
}

}  // namespace mirror::data
