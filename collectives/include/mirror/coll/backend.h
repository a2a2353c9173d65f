// mirror/coll/backend.h — the table of backends a Communicator can be built from, as users see it.
//
// Every backend is one row of one table (collectives/src/backends.cc): its name (what --backend and
// --host-transport take), which buffers its calls take (host or device memory), a one-line summary and
// the statistics it counts. make_communicator() either builds the row CommOptions names or, left to
// choose, the first host-buffer row that fits the ranks (shm on one host, hierarchical across hosts with
// as many ranks each, mpi otherwise) and says why it passed over the others (Communicator::selection_note).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mirror::coll {

// Which memory a backend's calls take.
enum class Buffers { kHost, kDevice };
const char* to_string(Buffers buffers);  // "host" | "device"

struct BackendInfo {
  const char* name;     // "mpi", "shm", "hierarchical", "nccl"
  Buffers buffers;
  const char* summary;  // one line, for --help and documentation
  // Names of the counters Communicator::statistics() reports for this backend, in that order.
  std::vector<const char*> statistics;
  // Whether Communicator::allocate_shared gives memory that the other ranks' collectives read and write
  // directly (so a trainer puts its gradients and parameters there), rather than ordinary memory.
  bool shares_allocated_buffers = false;
};

// The rows, in the order automatic selection tries the host-buffer ones.
std::vector<const BackendInfo*> backends();

// The programs' flags, parsed once: --backend host|<device backend, e.g. nccl> and, for host buffers,
// --host-transport auto|<host backend, e.g. shm, hierarchical, mpi>. Returns the row asked for, or nullptr
// for "host, chosen automatically". Throws kInvalidArgument naming the value and listing the valid ones.
const BackendInfo* parse_backend(std::string_view backend, std::string_view host_transport = "auto");

// One counter of Communicator::statistics().
struct Statistic {
  std::string name;
  std::uint64_t value = 0;
};

}  // namespace mirror::coll
