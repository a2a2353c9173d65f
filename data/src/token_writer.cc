// token_writer.cc — TokenWriter: the root attributes and the chunked token datasets of a token dataset.
#include "mirror/data/token_writer.h"

#include <algorithm>

#include "h5.h"
#include "mirror/data/dataset.h"
#include "mirror/error.h"
#include "token_dataset.h"
#include "tokenizer_blobs.h"

namespace mirror::data {

struct TokenWriter::Impl {
  std::string path;
  TokenHeader header;
  h5::Id file;
  h5::Id tokens[2];
  int64_t total[2] = {0, 0}, written[2] = {0, 0};
  bool closed = false;

  void create_split(int which, const char* name, int64_t n, int64_t chunk) {
    h5::Id group(H5Gcreate2(file.get(), name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    MIRROR_CHECK_HDF5(group.get(), "creating group '" << name << "' in '" << path << "'");
    const hsize_t dim = static_cast<hsize_t>(n);
    const hsize_t cdim = static_cast<hsize_t>(std::max<int64_t>(1, std::min(chunk, n)));
    h5::Id space(H5Screate_simple(1, &dim, nullptr), H5Sclose);
    h5::Id plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (n > 0) MIRROR_CHECK_HDF5(H5Pset_chunk(plist.get(), 1, &cdim), "setting token chunks");
    const hid_t type = header.vocab_size <= kMaxUInt16Vocab ? H5T_STD_U16LE : H5T_STD_U32LE;
    tokens[which] = h5::Id(H5Dcreate2(group.get(), "tokens", type, space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT),
                           H5Dclose);
    MIRROR_CHECK_HDF5(tokens[which].get(), "creating '/" << name << "/tokens' in '" << path << "'");
    total[which] = n;
  }
};

TokenWriter::TokenWriter(const std::string& path, const TokenHeader& header, int64_t train_tokens,
                         int64_t test_tokens, int64_t chunk_tokens)
    : impl_(std::make_unique<Impl>()) {
  MIRROR_CHECK(header.vocab_size >= 1 && header.vocab_size <= kMaxVocab, kInvalidArgument,
               "writing '" << path << "': vocab_size must be in 1.." << kMaxVocab << ", got " << header.vocab_size);
  MIRROR_CHECK(!header.tokenizer.empty(), kInvalidArgument, "writing '" << path << "': the tokenizer name is empty");
  MIRROR_CHECK(train_tokens >= 0 && test_tokens >= 0, kInvalidArgument, "writing '" << path << "': negative split size");
  MIRROR_CHECK(chunk_tokens >= 0, kInvalidArgument,
               "writing '" << path << "': tokens per chunk must be >= 0, got " << chunk_tokens);
  Impl& m = *impl_;
  m.path = path;
  m.header = header;
  m.file = h5::create_file(path);
  const hid_t f = m.file.get();
  h5::write_int_attr(f, "format_version", {kFormatVersion});
  h5::write_string_attr(f, "kind", {kTokensKind});
  h5::write_int_attr(f, "vocab_size", {header.vocab_size});
  h5::write_string_attr(f, "tokenizer", {header.tokenizer});
  if (header.train_bytes >= 0) h5::write_int_attr(f, "train_bytes", {header.train_bytes});
  if (header.test_bytes >= 0) h5::write_int_attr(f, "test_bytes", {header.test_bytes});
  write_tokenizer_blobs(f, header.tokenizer_blobs, path);
  const int64_t chunk = chunk_tokens > 0 ? chunk_tokens : kDefaultTokenChunk;
  m.create_split(0, "train", train_tokens, chunk);
  m.create_split(1, "test", test_tokens, chunk);
}

TokenWriter::~TokenWriter() = default;  // h5::Id members close quietly

void TokenWriter::append(const std::string& split, const uint32_t* tokens, int64_t count) {
  Impl& m = *impl_;
  MIRROR_CHECK(!m.closed, kInvalidArgument, "TokenWriter::append after close()");
  MIRROR_CHECK(split == "train" || split == "test", kInvalidArgument,
               "unknown split '" << split << "'; expected 'train' or 'test'");
  const int which = split == "train" ? 0 : 1;
  MIRROR_CHECK(count >= 0 && m.written[which] + count <= m.total[which], kInvalidArgument,
               "appending " << count << " tokens to split '" << split << "' would exceed its size " << m.total[which]
                            << " (" << m.written[which] << " written)");
  if (count == 0) return;
  for (int64_t i = 0; i < count; ++i) {
    MIRROR_CHECK(tokens[i] < static_cast<uint64_t>(m.header.vocab_size), kInvalidArgument,
                 "token " << tokens[i] << " at position " << m.written[which] + i << " of split '" << split
                          << "' is out of range; expected 0 <= token < " << m.header.vocab_size << " (vocab_size)");
  }
  const hsize_t start = static_cast<hsize_t>(m.written[which]), n = static_cast<hsize_t>(count);
  h5::Id fs = h5::dataset_space(m.tokens[which].get());
  MIRROR_CHECK_HDF5(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr), "selecting tokens");
  h5::Id ms(H5Screate_simple(1, &n, nullptr), H5Sclose);
  MIRROR_CHECK_HDF5(H5Dwrite(m.tokens[which].get(), H5T_NATIVE_UINT32, ms.get(), fs.get(), H5P_DEFAULT, tokens),
                    "writing tokens of '/" << split << "' to '" << m.path << "'");
  m.written[which] += count;
}

void TokenWriter::close() {
  Impl& m = *impl_;
  if (m.closed) return;
  for (int which = 0; which < 2; ++which) {
    MIRROR_CHECK(m.written[which] == m.total[which], kInvalidArgument,
                 "closing '" << m.path << "': split '" << (which ? "test" : "train") << "' got " << m.written[which]
                             << " tokens; expected " << m.total[which]);
  }
  MIRROR_CHECK_HDF5(H5Fflush(m.file.get(), H5F_SCOPE_LOCAL), "flushing '" << m.path << "'");
  m.tokens[0].reset();
  m.tokens[1].reset();
  m.file.reset();
  m.closed = true;
}

}  // namespace mirror::data
