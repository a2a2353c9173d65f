// tokenizer_blobs.cc — writing and reading a token dataset's /tokenizer group: each of the tokenizer's files
// as a 1-D uint8 dataset named as the file (docs/dataset-format.md, "Tokenizers").
#include "tokenizer_blobs.h"

#include "h5.h"
#include "mirror/data/dataset.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

constexpr const char* kGroup = "tokenizer";
constexpr hsize_t kMaxBlobBytes = hsize_t{1} << 30;

TokenizerBlob read_blob(hid_t group, const std::string& name, const std::string& file) {
  const std::string where = "/tokenizer/" + name;
  h5::Id d = h5::open_dataset(group, name, file);
  h5::Id t = h5::dataset_type(d.get());
  const auto dims = h5::dims_of(d.get());
  MIRROR_CHECK(H5Tget_class(t.get()) == H5T_INTEGER && H5Tget_size(t.get()) == 1 && dims.size() == 1 &&
                   static_cast<hsize_t>(dims[0]) <= kMaxBlobBytes,
               kFormat,
               "file '" << file << "' dataset '" << where << "': expected a 1-D uint8 dataset of at most 1 GiB "
                                 << "(a tokenizer file; see docs/dataset-format.md, \"Tokenizers\")");
  h5::check_storage(d.get(), file, where);
  TokenizerBlob blob{name, std::string(static_cast<std::size_t>(dims[0]), '\0')};
  if (dims[0] > 0)
    MIRROR_CHECK_HDF5(H5Dread(d.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, blob.bytes.data()),
                      "reading '" << where << "' of '" << file << "'");
  return blob;
}

}  // namespace

void write_tokenizer_blobs(hid_t file, const std::vector<TokenizerBlob>& blobs, const std::string& path) {
  if (blobs.empty()) return;
  h5::Id group(H5Gcreate2(file, kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  MIRROR_CHECK_HDF5(group.get(), "creating group '/tokenizer' in '" << path << "'");
  for (const TokenizerBlob& b : blobs) {
    const hsize_t n = b.bytes.size();
    h5::Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    h5::Id d(H5Dcreate2(group.get(), b.name.c_str(), H5T_STD_U8LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose);
    MIRROR_CHECK_HDF5(d.get(), "creating '/tokenizer/" << b.name << "' in '" << path << "'");
    if (n > 0)
      MIRROR_CHECK_HDF5(H5Dwrite(d.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, b.bytes.data()),
                        "writing '/tokenizer/" << b.name << "' to '" << path << "'");
  }
}

std::vector<TokenizerBlob> read_tokenizer_blobs(const Dataset& dataset) {
  const std::string& file = dataset.files().at(0);
  h5::Id f = h5::open_file_readonly(file);
  std::vector<TokenizerBlob> blobs;
  if (!h5::link_exists(f.get(), std::string("/") + kGroup)) return blobs;
  h5::Id group = h5::open_group(f.get(), std::string("/") + kGroup, file);
  H5G_info_t info{};
  MIRROR_CHECK_HDF5(H5Gget_info(group.get(), &info), "reading '/tokenizer' of '" << file << "'");
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256] = {};
    const ssize_t len = H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof(name),
                                           H5P_DEFAULT);
    MIRROR_CHECK(len > 0 && static_cast<std::size_t>(len) < sizeof(name), kFormat,
                 "file '" << file << "': entry " << i << " of '/tokenizer' has no name of at most 255 bytes");
    blobs.push_back(read_blob(group.get(), name, file));
  }
  return blobs;
}

}  // namespace mirror::data
