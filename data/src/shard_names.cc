// shard_names.cc — naming of shard files ("<stem>-IIIII-of-KKKKK.h5") and finding a dataset's shard set.
#include "shard_names.h"

#include <cstdio>
#include <filesystem>
#include <regex>

#include "mirror/data/dataset.h"
#include "mirror/error.h"

namespace mirror::data {

std::string shard_path(const std::string& path, int64_t index, int64_t count) {
  if (count <= 1) return path;
  std::string stem = path;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".h5") == 0) stem.resize(stem.size() - 3);
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05lld-of-%05lld.h5", static_cast<long long>(index), static_cast<long long>(count));
  return stem + buf;
}

std::vector<std::string> resolve_shard_files(const std::string& path) {
  namespace fs = std::filesystem;
  static const std::regex shard_re(R"((.*)-(\d{5})-of-(\d{5})\.h5)");
  std::smatch m;
  std::error_code ec;
  if (!fs::exists(path, ec) && path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0) {
    // "<stem>.h5" written with --shards K: look for "<stem>-00000-of-KKKKK.h5" next to it.
    const fs::path p(path);
    const std::string stem = p.stem().string();
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    static const std::regex first_re(R"((.*)-00000-of-(\d{5})\.h5)");
    std::string found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      std::smatch fm;
      if (std::regex_match(name, fm, first_re) && fm[1].str() == stem) {
        MIRROR_CHECK(found.empty(), kFormat, "dataset '" << path << "' does not exist and several shard sets match it ('"
                                                         << found << "', '" << e.path().string()
                                                         << "'); pass the first shard file explicitly");
        found = e.path().string();
      }
    }
    if (found.empty()) return {path};  // the reader reports the missing file
    return resolve_shard_files(found);
  }
  const std::string name = fs::path(path).filename().string();
  if (!std::regex_match(name, m, shard_re)) return {path};
  const int64_t count = std::stoll(m[3].str());
  MIRROR_CHECK(count >= 1 && std::stoll(m[2].str()) < count, kFormat,
               "shard file name '" << path << "' is not valid; expected <stem>-IIIII-of-KKKKK.h5 with I < K");
  const std::string base = (fs::path(path).parent_path() / (m[1].str() + ".h5")).string();
  std::vector<std::string> files;
  for (int64_t i = 0; i < count; ++i) {
    files.push_back(count == 1 ? (fs::path(path).parent_path() / (m[1].str() + "-00000-of-00001.h5")).string()
                               : shard_path(base, i, count));
    MIRROR_CHECK(fs::exists(files.back(), ec), kIo,
                 "shard file '" << files.back() << "' (shard " << i << " of " << count << ", named by '" << path
                                << "') does not exist; expected all " << count << " shard files side by side");
  }
  return files;
}

}  // namespace mirror::data
