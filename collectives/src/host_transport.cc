// host_transport.cc — HostTransport names (to_string / parse_host_transport).
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

}  // namespace mirror::coll
