// backends.cc — THE backend table: one row per backend (each defined in its own file), in the order
// automatic selection tries the host-buffer ones; the public lookups over it (backends, parse_backend,
// statistic, shm_staging_counts, shm_copy_probe, transport_name).
#include <sstream>

#include "backend_table.h"
#include "hierarchical_communicator.h"
#include "mirror/error.h"
#include "mpi_communicator.h"
#include "nccl_communicator.h"
#include "shm_communicator.h"

namespace mirror::coll {
namespace detail {

const std::vector<const BackendRow*>& backend_rows() {
  static const std::vector<const BackendRow*> rows = {
      &shm_backend(),           // host buffers, every rank on one host
      &hierarchical_backend(),  // host buffers, shm inside each host + MPI between hosts
      &mpi_backend(),           // host buffers, MPI between every pair of ranks
      &nccl_backend(),          // device buffers
  };
  return rows;
}

const BackendRow& row_of(const BackendInfo& info) {
  for (const BackendRow* row : backend_rows()) {
    if (&row->info == &info) return *row;
  }
  MIRROR_THROW(kInvalidArgument, "backend '" << info.name << "' is not a row of the backend table");
}

}  // namespace detail

const char* to_string(Buffers buffers) { return buffers == Buffers::kHost ? "host" : "device"; }

std::vector<const BackendInfo*> backends() {
  std::vector<const BackendInfo*> out;
  for (const detail::BackendRow* row : detail::backend_rows()) out.push_back(&row->info);
  return out;
}

namespace {
// "auto, shm, hierarchical or mpi" / "host or nccl"
std::string names_of(Buffers buffers, const char* first) {
  std::vector<std::string> names{first};
  for (const BackendInfo* b : backends()) {
    if (b->buffers == buffers) names.emplace_back(b->name);
  }
  std::ostringstream s;
  for (std::size_t i = 0; i < names.size(); ++i) s << (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") << names[i];
  return s.str();
}
const BackendInfo* find(std::string_view name, Buffers buffers) {
  for (const BackendInfo* b : backends()) {
    if (b->buffers == buffers && name == b->name) return b;
  }
  return nullptr;
}
}  // namespace

const BackendInfo* parse_backend(std::string_view backend, std::string_view host_transport) {
  if (backend == "host") {
    if (host_transport == "auto") return nullptr;
    const BackendInfo* b = find(host_transport, Buffers::kHost);
    MIRROR_CHECK(b != nullptr, kInvalidArgument,
                 "unknown host transport '" << host_transport << "'; expected " << names_of(Buffers::kHost, "auto"));
    return b;
  }
  const BackendInfo* b = find(backend, Buffers::kDevice);
  MIRROR_CHECK(b != nullptr, kInvalidArgument,
               "unknown communicator backend '" << backend << "'; expected " << names_of(Buffers::kDevice, "host"));
  return b;
}

std::uint64_t statistic(const Communicator& comm, std::string_view name) {
  for (const Statistic& s : comm.statistics()) {
    if (s.name == name) return s.value;
  }
  return 0;
}

ShmStagingCounts shm_staging_counts(const Communicator& comm) {
  ShmStagingCounts counts;
  counts.cached = statistic(comm, "staging_cached");
  counts.streaming = statistic(comm, "staging_streaming");
  counts.direct = statistic(comm, "direct");
  counts.evicted = statistic(comm, "evicted");
  counts.single = statistic(comm, "single");
  counts.single_permitted = statistic(comm, "single_permitted") != 0;
  return counts;
}

ShmCopyProbe shm_copy_probe(const Communicator& comm) {
  using detail::kCopyBandLow;
  using detail::kCopyProbeStatistics;
  ShmCopyProbe probe;
  const std::uint64_t source = statistic(comm, kCopyProbeStatistics[0]);
  if (source == 0) return probe;
  probe.injected = source == 2;
  probe.cost_us = static_cast<double>(statistic(comm, kCopyProbeStatistics[1])) / 1000.0;
  const std::uint64_t single_bands = statistic(comm, kCopyProbeStatistics[2]);
  for (int k = 0; k < detail::kCopyProbeFigures; ++k) {
    const int i = detail::figure_size_index(k);
    ShmCopyProbeFigure f;
    f.bytes = detail::kCopyProbeBytes[i];
    f.in_place = detail::figure_in_place(k);
    f.staged_us = static_cast<double>(statistic(comm, kCopyProbeStatistics[3 + 2 * k])) / 1000.0;
    f.single_us = static_cast<double>(statistic(comm, kCopyProbeStatistics[4 + 2 * k])) / 1000.0;
    f.band_lo = kCopyBandLow[i];
    f.band_hi = i + 1 < detail::kCopyProbeSizes ? kCopyBandLow[i + 1] : 0;
    f.single = (single_bands >> k & 1u) != 0;
    probe.figures.push_back(f);
  }
  return probe;
}

const char* transport_name(const Communicator& comm) {
  return comm.transport_label_.empty() ? comm.backend().name : comm.transport_label_.c_str();
}

}  // namespace mirror::coll
