// make_communicator.cc — make_communicator(): the backend CommOptions names, or, left to choose, the first
// host-buffer row of the table that fits the ranks' placement and can be made, with a note of why it passed
// over the ones before it.
#include <mpi.h>

#include "backend_table.h"
#include "mirror/coll/communicator.h"
#include "mirror/coll/runtime.h"
#include "mirror/error.h"

namespace mirror::coll {

std::unique_ptr<Communicator> make_communicator(const CommOptions& options) {
  MIRROR_CHECK(MpiRuntime::initialized(), kInvalidArgument,
               "make_communicator: MPI is not initialised; construct mirror::coll::MpiRuntime first in main()");
  const detail::Topology topology = detail::Topology::detect(MPI_COMM_WORLD, options.hosts_for_testing);
  std::unique_ptr<Communicator> comm;
  std::string note;
  if (options.backend != nullptr) {  // asked for by name: it must fit and be made
    const detail::BackendRow& row = detail::row_of(*options.backend);
    std::string why;
    MIRROR_CHECK(row.fits(topology, false, &why), kInvalidArgument,
                 "make_communicator: backend " << row.info.name << " is not possible: " << why);
    comm = row.make(options, topology, &why);
    MIRROR_CHECK(comm != nullptr, kInvalidArgument,
                 "make_communicator: backend " << row.info.name << " is not possible: " << why);
  } else {
    for (const detail::BackendRow* row : detail::backend_rows()) {
      if (row->info.buffers != Buffers::kHost) continue;
      std::string why;
      // Both answers are the same on every rank, so every rank walks the table alike.
      if (row->fits(topology, true, &why) && (comm = row->make(options, topology, &why))) break;
      note += (note.empty() ? "not " : "; not ") + std::string(row->info.name) + ": " + why;
    }
    MIRROR_CHECK(comm != nullptr, kInternal, "make_communicator: no host backend fits: " << note);
  }
  comm->selection_note_ = note;
  if (!note.empty()) comm->transport_label_ = std::string(comm->backend().name) + "; " + note;
  return comm;
}

}  // namespace mirror::coll
