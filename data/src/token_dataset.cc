// token_dataset.cc — Dataset::open for token datasets (docs/dataset-format.md, "Token datasets"): the root
// attributes, /train/tokens and /test/tokens (1-D uint16/uint32, every token < vocab_size, checked in one
// chunked pass), and the single-file rule. Messages name the file, the dataset or attribute, and the expectation.
#include <algorithm>
#include <vector>

#include "h5.h"
#include "mirror/data/dataset.h"
#include "mirror/error.h"
#include "token_dataset.h"

namespace mirror::data {

namespace {

constexpr const char* kDoc = "(see docs/dataset-format.md, \"Token datasets\")";

int64_t one_int(hid_t root, const std::string& file, const char* name, const char* expected) {
  auto v = h5::read_int_attr(root, name, "file '" + file + "'");
  MIRROR_CHECK(v.has_value() && v->size() == 1, kFormat,
               "file '" << file << "': attribute '" << name << "' " << (v ? "has several elements" : "missing on '/'")
                        << "; expected " << expected << " " << kDoc);
  return (*v)[0];
}

std::string one_string(hid_t root, const std::string& file, const char* name, const char* expected) {
  auto v = h5::read_string_attr(root, name, "file '" + file + "'");
  MIRROR_CHECK(v.has_value() && v->size() == 1 && !(*v)[0].empty(), kFormat,
               "file '" << file << "': attribute '" << name << "' " << (v ? "is not one non-empty string" : "missing on '/'")
                        << "; expected " << expected << " " << kDoc);
  return (*v)[0];
}

// Stored token type: unsigned 2- or 4-byte integers (any byte order); returns the size in bytes.
int64_t check_token_type(hid_t dset, int64_t vocab, const std::string& file, const std::string& name) {
  h5::Id t = h5::dataset_type(dset);
  const bool is_uint = H5Tget_class(t.get()) == H5T_INTEGER && H5Tget_sign(t.get()) == H5T_SGN_NONE;
  const auto size = static_cast<int64_t>(H5Tget_size(t.get()));
  MIRROR_CHECK(is_uint && (size == 2 || size == 4), kFormat,
               "file '" << file << "' dataset '" << name << "' has the wrong dtype; expected uint16 (vocab_size <= "
                        << kMaxUInt16Vocab << ") or uint32 token ids " << kDoc);
  MIRROR_CHECK(size == 4 || vocab <= kMaxUInt16Vocab, kFormat,
               "file '" << file << "' dataset '" << name << "' is uint16 but vocab_size is " << vocab
                        << "; expected uint32 for a vocabulary of more than " << kMaxUInt16Vocab << " tokens");
  return size;
}

// One pass over the tokens in blocks: every token < vocab; the first bad one is named with its position.
void check_tokens(hid_t dset, int64_t n, int64_t vocab, const std::string& file, const std::string& split,
                  const std::string& name) {
  constexpr int64_t kBlock = int64_t{1} << 20;
  std::vector<uint32_t> buf;
  h5::Id fspace = h5::dataset_space(dset);
  for (int64_t first = 0; first < n; first += kBlock) {
    const hsize_t start = static_cast<hsize_t>(first);
    const hsize_t count = static_cast<hsize_t>(std::min(kBlock, n - first));
    buf.resize(count);
    MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr),
                      "selecting tokens");
    h5::Id mspace(H5Screate_simple(1, &count, nullptr), H5Sclose);
    MIRROR_CHECK_HDF5(H5Dread(dset, H5T_NATIVE_UINT32, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()),
                      "reading '" << name << "' of '" << file << "'");
    const auto bad = std::find_if(buf.begin(), buf.end(), [vocab](uint32_t t) { return t >= vocab; });
    MIRROR_CHECK(bad == buf.end(), kFormat,
                 "file '" << file << "' dataset '" << name << "': token " << *bad << " at position "
                          << first + (bad - buf.begin()) << " of split '/" << split
                          << "' is out of range; expected 0 <= token < " << vocab << " (vocab_size)");
  }
}

// Checks /<split>/tokens and fills `out` (size, token_bytes, chunk size).
void check_token_split(hid_t root, const std::string& file, int64_t vocab, SplitInfo& out) {
  const std::string g = "/" + out.name, name = g + "/tokens";
  MIRROR_CHECK(h5::link_exists(root, g), kFormat,
               "file '" << file << "': split '" << g << "' missing; expected groups /train and /test " << kDoc);
  MIRROR_CHECK(h5::link_exists(root, name), kFormat,
               "file '" << file << "': dataset '" << name << "' missing; expected a 1-D dataset of token ids " << kDoc);
  h5::Id d = h5::open_dataset(root, name, file);
  out.token_bytes = check_token_type(d.get(), vocab, file, name);
  const auto dims = h5::dims_of(d.get());
  MIRROR_CHECK(dims.size() == 1, kFormat, "file '" << file << "' dataset '" << name << "' has " << dims.size()
                                                   << " dimensions; expected a 1-D sequence of token ids");
  h5::check_storage(d.get(), file, name);
  check_tokens(d.get(), dims[0], vocab, file, out.name, name);
  out.size = dims[0];
  out.shard_sizes = {dims[0]};
  h5::Id plist(H5Dget_create_plist(d.get()), H5Pclose);
  hsize_t chunk = 0;
  if (H5Pget_layout(plist.get()) == H5D_CHUNKED && H5Pget_chunk(plist.get(), 1, &chunk) == 1) {
    out.chunk_samples = static_cast<int64_t>(chunk);
  }
  MIRROR_CHECK(out.size > 0, kFormat, "file '" << file << "': split '" << g
                                               << "' is empty (0 tokens); expected at least one token");
}

// The optional attribute <split>_bytes: one integer >= 1; absent, the token count for "bytes", else 0 (unknown).
void read_text_bytes(hid_t root, const std::string& file, const std::string& tokenizer, SplitInfo& out) {
  const std::string name = out.name + "_bytes";
  const auto v = h5::read_int_attr(root, name, "file '" + file + "'");
  if (!v) {
    out.text_bytes = tokenizer == "bytes" ? out.size : 0;
    return;
  }
  MIRROR_CHECK(v->size() == 1 && (*v)[0] >= 1, kFormat,
               "file '" << file << "': attribute '" << name << "' is "
                        << (v->size() == 1 ? std::to_string((*v)[0]) : "not one integer")
                        << "; expected the split's text size in bytes, at least 1 " << kDoc);
  out.text_bytes = (*v)[0];
}

}  // namespace

bool is_token_dataset(const std::string& file) {
  h5::Id f = h5::open_file_readonly(file);
  h5::Id root = h5::open_group(f.get(), "/", file);
  auto kind = h5::read_string_attr(root.get(), "kind", "file '" + file + "'");
  if (!kind) return false;
  MIRROR_CHECK(kind->size() == 1 && (*kind)[0] == kTokensKind, kFormat,
               "file '" << file << "': attribute 'kind' is '" << (kind->empty() ? "" : (*kind)[0])
                        << "'; expected '" << kTokensKind << "' (a token dataset) or no 'kind' attribute (a dataset of "
                        << "labelled samples) (see docs/dataset-format.md)");
  return true;
}

Dataset Dataset::open_tokens(const std::vector<std::string>& files) {
  MIRROR_CHECK(files.size() == 1, kFormat,
               "'" << files[0] << "' is a token dataset of " << files.size() << " shard files; token datasets are "
                   << "single files (write it again with mirror-data text) " << kDoc);
  const std::string& file = files[0];
  h5::Id f = h5::open_file_readonly(file);
  h5::Id root = h5::open_group(f.get(), "/", file);
  Dataset ds;
  DatasetInfo& info = ds.info_;
  info.files = files;
  info.text = true;
  info.format_version = one_int(root.get(), file, "format_version", "an integer");
  MIRROR_CHECK(info.format_version == kFormatVersion, kFormat,
               "file '" << file << "': format_version is " << info.format_version << "; expected " << kFormatVersion);
  info.vocab_size = one_int(root.get(), file, "vocab_size", "an integer, the number of token ids");
  MIRROR_CHECK(info.vocab_size >= 1 && info.vocab_size <= kMaxVocab, kFormat,
               "file '" << file << "': vocab_size is " << info.vocab_size << "; expected 1 <= vocab_size <= " << kMaxVocab);
  info.tokenizer = one_string(root.get(), file, "tokenizer", "the tokenizer's name, e.g. 'bytes'");
  info.num_classes = info.vocab_size;
  info.features = 0;
  ds.train_.name = "train";
  ds.test_.name = "test";
  check_token_split(root.get(), file, info.vocab_size, ds.train_);
  check_token_split(root.get(), file, info.vocab_size, ds.test_);
  read_text_bytes(root.get(), file, info.tokenizer, ds.train_);
  read_text_bytes(root.get(), file, info.tokenizer, ds.test_);
  info.train_size = ds.train_.size;
  info.test_size = ds.test_.size;
  return ds;
}

}  // namespace mirror::data
