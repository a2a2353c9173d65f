// mpi_check.h — MIRROR_CHECK_MPI: turns a failed MPI call into mirror::Error(kMpi) with file:line and
// MPI's own error string. Private to collectives/.
#pragma once

#include <mpi.h>

#include <string>

#include "mirror/error.h"

namespace mirror::coll::detail {
inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len));
}
}  // namespace mirror::coll::detail

#define MIRROR_CHECK_MPI(call)                                                                  \
  do {                                                                                          \
    int mirror_mpi_rc_ = (call);                                                                \
    if (mirror_mpi_rc_ != MPI_SUCCESS)                                                          \
      MIRROR_THROW(kMpi, #call << " failed: " << ::mirror::coll::detail::mpi_error_string(mirror_mpi_rc_)); \
  } while (0)
