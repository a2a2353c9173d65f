// shard_names.h — finding the set of shard files a dataset path names (private; see dataset.h for the rules).
#pragma once

#include <string>
#include <vector>

namespace mirror::data {

// The files of the dataset named by `path`, in shard order; {path} when it names a single file.
// Throws kIo when a shard of the set is missing.
std::vector<std::string> resolve_shard_files(const std::string& path);

}  // namespace mirror::data
