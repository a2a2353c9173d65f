// token_dataset.h — recognising a token dataset (private): the `kind` attribute of a file's root, and the
// names of the token layout shared by the reader, the checks on open and the writer.
#pragma once

#include <cstdint>
#include <string>

namespace mirror::data {

inline constexpr const char* kTokensKind = "tokens";  // root attribute `kind` of a token dataset
// Largest vocabulary: token ids are handed to the trainer as int32.
inline constexpr int64_t kMaxVocab = (int64_t{1} << 31) - 1;
// Largest vocabulary stored as uint16; a larger one is stored as uint32.
inline constexpr int64_t kMaxUInt16Vocab = int64_t{1} << 16;

// True when `file`'s root has kind = "tokens"; false when it has no `kind` (a dataset of labelled samples).
// Throws kFormat for any other kind, kIo/kFormat when the file cannot be opened as HDF5.
bool is_token_dataset(const std::string& file);

}  // namespace mirror::data
