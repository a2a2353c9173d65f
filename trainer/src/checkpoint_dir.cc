// checkpoint_dir.cc — a directory of checkpoints: file naming by step, listing, the newest valid one, pruning.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "mirror/error.h"
#include "mirror/train/checkpoint.h"

namespace mirror::train {
namespace fs = std::filesystem;

std::string checkpoint_file_name(std::int64_t step) {
  MIRROR_CHECK(step >= 0, kInvalidArgument, "checkpoint step must be >= 0, got " << step);
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt-%08lld.h5", static_cast<long long>(step));
  return name;
}

std::string write_checkpoint(const std::string& dir, const CheckpointState& state) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) MIRROR_THROW(kIo, "cannot create checkpoint directory " << dir << ": " << ec.message());
  const std::string path = (fs::path(dir) / checkpoint_file_name(state.step)).string();
  write_checkpoint_file(path, state);
  return path;
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& dir, bool verify) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) MIRROR_THROW(kIo, "checkpoint directory " << dir << " does not exist");
  static const std::regex pattern(R"(ckpt-(\d+)\.h5)");
  std::vector<CheckpointEntry> entries;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = item.path().filename().string();
    if (!item.is_regular_file() || !std::regex_match(name, m, pattern)) continue;
    CheckpointEntry e;
    e.path = item.path().string();
    e.step = std::stoll(m[1].str());
    e.bytes = item.file_size(ec);
    if (verify) {
      try {
        CheckpointState s = read_checkpoint(e.path);
        e.valid = true;
        e.epoch = s.epoch;
        const std::string& m_all = s.metrics_jsonl;
        std::size_t end = m_all.find_last_not_of('\n');
        if (end != std::string::npos) {
          std::size_t begin = m_all.rfind('\n', end);
          e.last_metrics = m_all.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
        }
      } catch (const mirror::Error& err) {
        e.valid = false;
        e.problem = err.message();
      }
    }
    entries.push_back(std::move(e));
  }
  if (ec) MIRROR_THROW(kIo, "cannot list checkpoint directory " << dir << ": " << ec.message());
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return entries;
}

std::optional<std::string> latest_valid_checkpoint(const std::string& dir, std::vector<std::string>* skipped) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<CheckpointEntry> entries = list_checkpoints(dir, false);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    try {
      read_checkpoint(it->path);
      return it->path;
    } catch (const mirror::Error& err) {
      if (skipped) skipped->push_back(it->path + ": " + err.message());
    }
  }
  return std::nullopt;
}

int remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  static const std::regex pattern(R"(\.ckpt-\d+\.h5\.tmp\.\d+)");
  int removed = 0;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (std::regex_match(item.path().filename().string(), pattern) && fs::remove(item.path(), ec)) ++removed;
  }
  return removed;
}

void prune_checkpoints(const std::string& dir, int keep) {
  if (keep <= 0) return;
  std::vector<CheckpointEntry> entries = list_checkpoints(dir, false);
  const std::size_t keep_n = static_cast<std::size_t>(keep);
  for (std::size_t i = 0; i + keep_n < entries.size(); ++i) {
    std::error_code ec;
    fs::remove(entries[i].path, ec);  // a file that cannot be removed is left; the next prune tries again
  }
}

}  // namespace mirror::train
