// backend_table.h — BackendRow: one row of the backend table (backends.cc). A backend is one file that
// defines its communicator and its row; the table lists the rows. A row adds to the public BackendInfo
// (name, buffers, summary, statistics) what make_communicator needs: whether the backend fits the ranks'
// placement, and its factory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mirror/coll/backend.h"
#include "mirror/coll/communicator.h"
#include "topology.h"

namespace mirror::coll::detail {

struct BackendRow {
  BackendInfo info;
  // Whether the backend can serve these ranks (automatic: whether auto should pick it); *why if not.
  // The same answer on every rank (it depends only on the topology).
  bool (*fits)(const Topology& topology, bool automatic, std::string* why);
  // Builds it over topology.comm (collective). nullptr (on every rank alike) with *why when it cannot be
  // made here after all (e.g. no room for a shared-memory segment); errors throw.
  std::unique_ptr<Communicator> (*make)(const CommOptions& options, const Topology& topology, std::string* why);
};

// The table, in the order automatic selection tries the host-buffer rows.
const std::vector<const BackendRow*>& backend_rows();
// The row of `info` (a BackendInfo of the table).
const BackendRow& row_of(const BackendInfo& info);

}  // namespace mirror::coll::detail
