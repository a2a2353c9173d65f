// shm_copy.cc — names of the shared-memory copy modes (ShmCopy: to_string / parse_shm_copy).
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {

const char* to_string(ShmCopy copy) {
  switch (copy) {
    case ShmCopy::kAuto: return "auto";
    case ShmCopy::kStaged: return "staged";
    case ShmCopy::kSingle: return "single";
  }
  return "?";
}

ShmCopy parse_shm_copy(std::string_view name) {
  if (name == "auto") return ShmCopy::kAuto;
  if (name == "staged") return ShmCopy::kStaged;
  if (name == "single") return ShmCopy::kSingle;
  MIRROR_THROW(kInvalidArgument,
               "unknown shared-memory copy mode '" << name << "'; expected auto, staged or single");
}

}  // namespace mirror::coll
