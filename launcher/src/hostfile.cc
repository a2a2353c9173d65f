// hostfile.cc — parses and checks Open MPI hostfiles ("host slots=N max_slots=M", '#' comments).
#include "mirror/launch/hostfile.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "mirror/error.h"

namespace mirror::launch {
namespace {

int parse_positive(const std::string& value, const std::string& where, const std::string& token) {
  std::size_t used = 0;
  long parsed = 0;
  try {
    parsed = std::stol(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MIRROR_CHECK(used == value.size() && !value.empty() && parsed > 0 && parsed < (1L << 20), kFormat,
               where << ": '" << token << "': " << token.substr(0, token.find('='))
                     << " must be a positive integer (ranks on that host), got '" << value << "'");
  return static_cast<int>(parsed);
}

}  // namespace

std::vector<HostEntry> parse_hostfile(const std::string& text, const std::string& name) {
  std::vector<HostEntry> hosts;
  std::map<std::string, int> first_line;  // host -> the line that named it first
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string word;
    if (!(words >> word)) continue;  // blank or comment
    const std::string where = "hostfile " + name + " line " + std::to_string(number);
    MIRROR_CHECK(word.find('=') == std::string::npos, kFormat,
                 where << ": expected a host name first, as in 'node1 slots=4', got '" << word << "'");
    const auto [seen, fresh] = first_line.emplace(word, number);
    MIRROR_CHECK(fresh, kFormat,
                 where << ": host '" << word << "' is listed again (first on line " << seen->second
                       << "); give each host once, with slots= the number of ranks it runs");
    HostEntry entry;
    entry.host = word;
    while (words >> word) {
      const auto eq = word.find('=');
      const std::string key = eq == std::string::npos ? word : word.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (key == "slots") {
        entry.slots = parse_positive(value, where, word);
      } else if (key == "max_slots" || key == "max-slots") {
        entry.max_slots = parse_positive(value, where, word);
      } else {
        MIRROR_THROW(kFormat, where << ": unknown field '" << word << "' (expected slots=N or max_slots=N)");
      }
    }
    if (entry.slots && entry.max_slots) {
      MIRROR_CHECK(*entry.slots <= *entry.max_slots, kFormat,
                   where << ": slots=" << *entry.slots << " exceeds max_slots=" << *entry.max_slots);
    }
    hosts.push_back(std::move(entry));
  }
  MIRROR_CHECK(!hosts.empty(), kFormat,
               "hostfile " << name << " names no host (expected lines like 'node1 slots=4')");
  return hosts;
}

std::vector<HostEntry> read_hostfile(const std::string& path) {
  std::error_code ec;
  MIRROR_CHECK(std::filesystem::is_regular_file(path, ec), kIo,
               "hostfile '" << path << "' (--hostfile) does not exist or is not a regular file");
  std::ifstream in(path);
  MIRROR_CHECK(in.good(), kIo, "cannot read hostfile '" << path << "' (--hostfile)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hostfile(text.str(), path);
}

std::optional<int> total_slots(const std::vector<HostEntry>& hosts) {
  int total = 0;
  for (const auto& h : hosts) {
    if (!h.slots) return std::nullopt;
    total += *h.slots;
  }
  return total;
}

}  // namespace mirror::launch
