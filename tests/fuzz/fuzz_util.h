// fuzz_util.h — what every libFuzzer target shares: a per-process scratch file that the fuzzed bytes are
// written to (the parsers under test read files, not buffers), and HDF5's error printing switched off.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace mirror::fuzz {

// A path in a directory of this process's own ($TMPDIR or /tmp, plus "mirror-fuzz-<pid>").
inline std::string scratch_path(const std::string& name) {
  namespace fs = std::filesystem;
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("mirror-fuzz-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

// Replaces the file at `path` with exactly `size` bytes of `data`; aborts when it cannot (a harness fault).
inline void write_file(const std::string& path, const uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

}  // namespace mirror::fuzz
