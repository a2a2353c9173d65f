// shm_piece.cc — the single-copy paths' piece size from the L2 cache size (shm_piece.h).
#include "shm_piece.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace mirror::coll::detail {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::size_t parse_cache_size(const std::string& text) {
  std::size_t i = 0, value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) value = value * 10 + (text[i++] - '0');
  if (i == 0) return 0;
  const std::string unit = text.substr(i);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return 0;
}

std::size_t l2_cache_bytes() {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string type = read_line(dir + "type");
    if (read_line(dir + "level") == "2" && (type == "Data" || type == "Unified")) {
      if (const std::size_t bytes = parse_cache_size(read_line(dir + "size")); bytes > 0) return bytes;
    }
  }
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long bytes = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (bytes > 0) return static_cast<std::size_t>(bytes);
#endif
  return 0;
}

std::size_t single_piece_bytes(int ranks, std::size_t l2) {
  if (l2 == 0) return kShmMaxPieceBytes;
  const std::size_t share = l2 / static_cast<std::size_t>(std::max(ranks, 1));
  std::size_t piece = kShmMinPieceBytes;
  while (piece * 2 <= share && piece < kShmMaxPieceBytes) piece *= 2;
  return piece;
}

}  // namespace mirror::coll::detail
