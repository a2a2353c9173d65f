// host_transport.cc — names of the host backend's transport options: HostTransport and ShmStaging
// (to_string / parse_*).
#include "mirror/coll/communicator.h"
#include "mirror/error.h"

namespace mirror::coll {

const char* to_string(HostTransport transport) {
  switch (transport) {
    case HostTransport::kAuto: return "auto";
    case HostTransport::kShm: return "shm";
    case HostTransport::kMpi: return "mpi";
  }
  return "?";
}

HostTransport parse_host_transport(std::string_view name) {
  if (name == "auto") return HostTransport::kAuto;
  if (name == "shm") return HostTransport::kShm;
  if (name == "mpi") return HostTransport::kMpi;
  MIRROR_THROW(kInvalidArgument, "unknown host transport '" << name << "'; expected auto, shm or mpi");
}

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
