// mirror/launch/program_lookup.h — finds programs the way execvp does (a name with '/' is a path; a bare
// name is searched on PATH), so a missing program or mpirun is reported before anything starts.
#pragma once

#include <optional>
#include <string>

#include "mirror/launch/environment.h"

namespace mirror::launch {

// The path execvp would run for `name` with this PATH value (nullopt PATH: "/usr/local/bin:/usr/bin:/bin"),
// or nullopt when there is none. A file must be regular and executable to count.
std::optional<std::string> find_executable(const std::string& name, const std::optional<std::string>& path_var);

// The program to run: like find_executable but throws mirror::Error(kInvalidArgument) saying whether the
// path does not exist, is not executable, or the name is not on PATH.
std::string resolve_program(const std::string& name, const Environment& env);

// mpirun: $MIRROR_MPIRUN when set (must be an executable), else "mpirun" on PATH. Throws
// mirror::Error(kInvalidArgument) with what to install or set when there is none.
std::string find_mpirun(const Environment& env);

}  // namespace mirror::launch
