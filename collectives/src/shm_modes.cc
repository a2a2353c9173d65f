// shm_modes.cc — names of the shared-memory transport's modes: ShmStaging (to_string / parse_shm_staging)
// and ShmCopy (to_string / parse_shm_copy), from one table per enum and one lookup for both.
#include <array>
#include <sstream>
#include <string>
#include <utility>

#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {
namespace {

template <typename Mode>
using NameTable = std::array<std::pair<Mode, const char*>, 3>;

constexpr NameTable<ShmStaging> kStagingNames{{
    {ShmStaging::kAuto, "auto"}, {ShmStaging::kCached, "cached"}, {ShmStaging::kStreaming, "streaming"}}};
constexpr NameTable<ShmCopy> kCopyNames{{{ShmCopy::kAuto, "auto"}, {ShmCopy::kStaged, "staged"}, {ShmCopy::kSingle, "single"}}};

template <typename Mode>
const char* name_of(const NameTable<Mode>& table, Mode mode) {
  for (const auto& [m, name] : table)
    if (m == mode) return name;
  return "?";
}

// `what` names the kind of mode in the error ("shared-memory staging mode").
template <typename Mode>
Mode parse_name(const NameTable<Mode>& table, std::string_view name, const char* what) {
  for (const auto& [m, n] : table)
    if (name == n) return m;
  std::ostringstream expected;
  for (std::size_t i = 0; i < table.size(); ++i)
    expected << (i == 0 ? "" : i + 1 == table.size() ? " or " : ", ") << table[i].second;
  MIRROR_THROW(kInvalidArgument, "unknown " << what << " '" << name << "'; expected " << expected.str());
}

}  // namespace

const char* to_string(ShmStaging staging) { return name_of(kStagingNames, staging); }
ShmStaging parse_shm_staging(std::string_view name) {
  return parse_name(kStagingNames, name, "shared-memory staging mode");
}

const char* to_string(ShmCopy copy) { return name_of(kCopyNames, copy); }
ShmCopy parse_shm_copy(std::string_view name) { return parse_name(kCopyNames, name, "shared-memory copy mode"); }

}  // namespace mirror::coll
