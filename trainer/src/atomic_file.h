// atomic_file.h — a file written whole or not at all: to a temporary beside it (".<name>.tmp.<pid>", which no
// reader takes for the real file), flushed and fsync'd, then renamed over the real name and the directory
// fsync'd. On any error the temporary is removed and the real name is untouched. Used by the safetensors writer
// and the model export/import files (model.json, config.json).
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace mirror::train {

// Calls write(stream) on the temporary, then renames it to `path`. kIo naming the path when a write, the flush
// or the rename fails; errors thrown by `write` pass through (after the temporary is removed).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace mirror::train
