// split_reader.cc — SplitReader: coalesced hyperslab reads of rows across shard files, and the scaling
// of stored values to float.
#include "split_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "finite_check.h"
#include "mirror/error.h"

namespace mirror::data {

SplitReader::SplitReader(const Dataset& dataset, const std::string& split, std::size_t chunk_cache_bytes) {
  MIRROR_CHECK(!dataset.info().text, kInvalidArgument,
               "dataset " << dataset.describe() << " is a token dataset; its windows are read by context, not as samples");
  const SplitInfo& info = dataset.split(split);
  split_ = "/" + info.name;
  dtype_ = dataset.info().x_dtype;
  row_bytes_ = static_cast<std::size_t>(dataset.info().features) * dtype_size(dtype_);
  size_ = info.size;
  offsets_.push_back(0);
  for (std::size_t s = 0; s < dataset.files().size(); ++s) {
    Shard sh;
    sh.path = dataset.files()[s];
    sh.file = h5::open_file_readonly(sh.path);
    sh.x = h5::open_dataset(sh.file.get(), split_ + "/x", sh.path, chunk_cache_bytes);
    sh.y = h5::open_dataset(sh.file.get(), split_ + "/y", sh.path);
    sh.size = info.shard_sizes[s];
    // The file may have changed since Dataset::open checked it.
    MIRROR_CHECK(h5::dims_of(sh.x.get())[0] == sh.size, kFormat,
                 "file '" << sh.path << "' dataset '" << split_ << "/x' changed size since it was opened");
    offsets_.push_back(offsets_.back() + sh.size);
    shards_.push_back(std::move(sh));
  }
}

void SplitReader::read_in_shard(std::size_t s, int64_t local_first, int64_t count, char* x, int32_t* y) {
  Shard& sh = shards_[s];
  h5::QuietErrors quiet;  // a failed read becomes a mirror::Error naming the file, not an HDF5 stack dump
  h5::Id fs = h5::dataset_space(sh.x.get());
  const int nd = H5Sget_simple_extent_ndims(fs.get());
  std::vector<hsize_t> start(static_cast<std::size_t>(nd), 0), cnt(static_cast<std::size_t>(nd));
  MIRROR_CHECK_HDF5(H5Sget_simple_extent_dims(fs.get(), cnt.data(), nullptr), "reading dims");
  start[0] = static_cast<hsize_t>(local_first);
  cnt[0] = static_cast<hsize_t>(count);
  MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr),
                    "selecting rows of '" << split_ << "/x'");
  h5::Id ms(H5Screate_simple(nd, cnt.data(), nullptr), H5Sclose);
  const hid_t mtype = dtype_ == DType::kUInt8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT;
  MIRROR_CHECK_HDF5(H5Dread(sh.x.get(), mtype, ms.get(), fs.get(), H5P_DEFAULT, x),
                    "reading rows " << local_first << ".." << local_first + count << " of '" << split_ << "/x' in '"
                                    << sh.path << "'");
  if (dtype_ == DType::kFloat32) check_finite(s, local_first, count, reinterpret_cast<const float*>(x));
  h5::Id yfs = h5::dataset_space(sh.y.get());
  MIRROR_CHECK_HDF5(H5Sselect_hyperslab(yfs.get(), H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr),
                    "selecting rows of '" << split_ << "/y'");
  h5::Id yms(H5Screate_simple(1, cnt.data(), nullptr), H5Sclose);
  MIRROR_CHECK_HDF5(H5Dread(sh.y.get(), H5T_NATIVE_INT32, yms.get(), yfs.get(), H5P_DEFAULT, y),
                    "reading rows of '" << split_ << "/y' in '" << sh.path << "'");
  ++reads_;
}

void SplitReader::check_finite(std::size_t s, int64_t local_first, int64_t count, const float* x) const {
  const auto features = static_cast<int64_t>(row_bytes_ / sizeof(float));
  const int64_t bad = first_non_finite(x, static_cast<std::size_t>(count * features));
  if (bad < 0) return;
  const int64_t row = local_first + bad / features;
  MIRROR_THROW(kFormat, "file '" << shards_[s].path << "' split '" << split_ << "': sample " << offsets_[s] + row
                                 << " (row " << row << " of this file) feature " << bad % features << " is "
                                 << non_finite_name(x[bad]) << "; expected finite values (a NaN or Inf input makes "
                                 << "the loss NaN); fix the data or re-import it with mirror-data import");
}

void SplitReader::read_range(int64_t first, int64_t count, void* x, int32_t* y) {
  MIRROR_CHECK(first >= 0 && count >= 0 && first + count <= size_, kInvalidArgument,
               "rows " << first << ".." << first + count << " are outside split '" << split_ << "' of " << size_
                       << " samples");
  char* xp = static_cast<char*>(x);
  while (count > 0) {
    const std::size_t s = static_cast<std::size_t>(
        std::upper_bound(offsets_.begin(), offsets_.end(), first) - offsets_.begin() - 1);
    const int64_t local = first - offsets_[s];
    const int64_t n = std::min(count, shards_[s].size - local);
    read_in_shard(s, local, n, xp, y);
    xp += static_cast<std::size_t>(n) * row_bytes_;
    y += n;
    first += n;
    count -= n;
  }
}

void SplitReader::gather(const std::vector<int64_t>& indices, void* x, int32_t* y) {
  const std::size_t n = indices.size();
  for (int64_t i : indices) {
    MIRROR_CHECK(i >= 0 && i < size_, kInvalidArgument,
                 "sample index " << i << " is outside split '" << split_ << "' of " << size_ << " samples");
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return indices[a] < indices[b]; });
  char* out = static_cast<char*>(x);
  std::size_t i = 0;
  while (i < n) {
    // A run: sorted indices whose neighbours are at most kMaxGap apart, not crossing a shard boundary.
    const int64_t first = indices[order[i]];
    const std::size_t s = static_cast<std::size_t>(
        std::upper_bound(offsets_.begin(), offsets_.end(), first) - offsets_.begin() - 1);
    std::size_t j = i + 1;
    while (j < n && indices[order[j]] - indices[order[j - 1]] <= kMaxGap && indices[order[j]] < offsets_[s + 1]) ++j;
    const int64_t last = indices[order[j - 1]];
    const int64_t count = last - first + 1;
    scratch_x_.resize(static_cast<std::size_t>(count) * row_bytes_);
    scratch_y_.resize(static_cast<std::size_t>(count));
    read_in_shard(s, first - offsets_[s], count, scratch_x_.data(), scratch_y_.data());
    for (std::size_t k = i; k < j; ++k) {
      const std::size_t pos = order[k];
      const std::size_t row = static_cast<std::size_t>(indices[pos] - first);
      std::memcpy(out + pos * row_bytes_, scratch_x_.data() + row * row_bytes_, row_bytes_);
      y[pos] = scratch_y_[row];
    }
    i = j;
  }
}

void scale_to_float(const void* raw, DType dtype, std::size_t n, const Scaling& scaling, float* out) {
  const double a = scaling.scale / scaling.std;
  const double b = -scaling.mean / scaling.std;
  if (dtype == DType::kUInt8) {
    float lut[256];
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<float>(v * a + b);
    const auto* p = static_cast<const uint8_t*>(raw);
    for (std::size_t i = 0; i < n; ++i) out[i] = lut[p[i]];
  } else {
    const auto* p = static_cast<const float*>(raw);
    if (a == 1.0 && b == 0.0) {
      std::memcpy(out, p, n * sizeof(float));
    } else {
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i] * a + b);
    }
  }
}

}  // namespace mirror::data
