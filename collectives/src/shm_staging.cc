// shm_staging.cc — names of the shared-memory staging modes (ShmStaging: to_string / parse_shm_staging).
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {

const char* to_string(ShmStaging staging) {
  switch (staging) {
    case ShmStaging::kAuto: return "auto";
    case ShmStaging::kCached: return "cached";
    case ShmStaging::kStreaming: return "streaming";
  }
  return "?";
}

ShmStaging parse_shm_staging(std::string_view name) {
  if (name == "auto") return ShmStaging::kAuto;
  if (name == "cached") return ShmStaging::kCached;
  if (name == "streaming") return ShmStaging::kStreaming;
  MIRROR_THROW(kInvalidArgument,
               "unknown shared-memory staging mode '" << name << "'; expected auto, cached or streaming");
}

}  // namespace mirror::coll
