// tokenizer_blobs.h — a tokenizer's files in a token dataset (private): the group /tokenizer, one 1-D uint8
// dataset per file, named as the file ("model", "vocab.json", "merges.txt").
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "mirror/data/tokenizer.h"

namespace mirror::data {

// Writes /tokenizer/<name> for each blob into the open file `file` (`path` for messages); nothing for no blobs.
void write_tokenizer_blobs(hid_t file, const std::vector<TokenizerBlob>& blobs, const std::string& path);

}  // namespace mirror::data
